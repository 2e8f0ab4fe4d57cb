import ArgumentParser
import Dispatch
import PreciseTimer
import PreciseTimerReference

import Glibc

/// One ticker run: a repeating timer per backend, all running at once, each on its own service,
/// until the duration passes, every ticker reached its count, or Ctrl-C.
struct TickerRun {
    /// What ends the run.
    enum Length {
        /// Run this long.
        case duration(Duration)
        /// Run until every backend made this many handler calls.
        case count(Int)
    }

    /// The most lateness samples kept per backend (32 MB, touched up front; over an hour at 1 ms);
    /// later ticks are counted but not sampled.
    static let sampleLimit = 4_000_000

    /// The row of the `--async` ticker.
    static let forAwaitName = "PreciseTimer for await"

    /// The ticker period.
    var interval: Duration
    /// What ends the run.
    var length: Length
    /// Which services to compare.
    var backend: TickerBackend
    /// The missed-tick policy of every ticker.
    var policy: TickerPolicy
    /// `PreciseTimer.Configuration.spinMargin`.
    var spinMargin: Duration
    /// Whether the summary is printed as JSON (the progress line then goes to a terminal on
    /// standard error, or nowhere).
    var json: Bool
    /// Whether a further PreciseTimer ticker is driven by `for await` over `ticks(every:)`.
    var forAwait: Bool

    /// Runs the tickers and collects their summaries.
    ///
    /// - Returns: The report, also when Ctrl-C ended the run.
    /// - Throws: `ValidationError` when `PreciseTimer` rejects the configuration (`--spin-margin`),
    ///   `PreciseTimerError` when a service cannot start or schedule.
    func run() throws -> RunReport {
        let finished = DispatchSemaphore(value: 0)
        // Before the services: their threads must inherit the blocked SIGINT (see `Interruption`).
        let interruption = Interruption { finished.signal() }
        let services = try self.makeServices()
        let recorders = services.map { name, _ in
            LatencyRecorder(name: name, interval: self.interval, limit: self.limit, capacity: self.capacity)
        }
        let progress = self.makeProgressLine(recorders)

        let startedAt = MonotonicInstant.now()
        var loops: [Task<Void, Never>] = []
        for ((name, service), recorder) in zip(services, recorders) {
            // The run's own grid, origin + k·interval: the ticker is measured against it.
            let origin = MonotonicInstant.now()
            recorder.setOrigin(origin)
            if name == Self.forAwaitName {
                // The async way: a tick sequence (first tick one interval from now), consumed
                // by a task. Shutting the service down at the end finishes the loop.
                let ticks = try service.ticks(every: self.interval, missedTicks: self.policy.missedTicks)
                loops.append(
                    Task.detached {
                        for await tick in ticks where recorder.record(tick) == .reachedLimit {
                            finished.signal()
                            break
                        }
                    })
                continue
            }
            try service.scheduleRepeating(
                id: "ticker", every: self.interval,
                startingAt: origin.advanced(by: self.interval),
                options: TimerOptions(missedTicks: self.policy.missedTicks)
            ) {
                [weak service] tick in
                if recorder.record(tick) == .reachedLimit {
                    service?.cancel(tick.id)
                    finished.signal()
                }
            }
        }
        progress?.start()

        switch self.length {
        case .duration(let duration):
            _ = finished.wait(timeout: .now() + .nanoseconds(Int(duration.wholeNanoseconds)))
        case .count:
            var running = recorders.count
            while running > 0, !interruption.happened {
                finished.wait()
                running -= 1
            }
        }

        for recorder in recorders { recorder.close() }
        let elapsed = MonotonicInstant.now() - startedAt
        for (_, service) in services { service.shutdown() }
        for loop in loops { loop.cancel() }
        progress?.finish()

        return RunReport(
            intervalNanoseconds: self.interval.wholeNanoseconds,
            policy: self.policy.rawValue,
            spinMarginNanoseconds: self.spinMargin.wholeNanoseconds,
            durationNanoseconds: self.duration?.wholeNanoseconds,
            count: self.limit,
            elapsedNanoseconds: elapsed.wholeNanoseconds,
            interrupted: interruption.happened,
            results: recorders.map { $0.summary() }
        )
    }

    private var limit: Int? {
        if case .count(let count) = self.length { count } else { nil }
    }

    private var duration: Duration? {
        if case .duration(let duration) = self.length { duration } else { nil }
    }

    /// Room for every tick the run can make: one per period (even `burst` makes no more), plus
    /// slack for the period boundary; at most ``sampleLimit``.
    private var capacity: Int {
        switch self.length {
        case .count(let count):
            return min(count, Self.sampleLimit)
        case .duration(let duration):
            let periods = duration.wholeNanoseconds / max(self.interval.wholeNanoseconds, 1)
            return Int(min(periods + periods / 100 + 16, Int64(Self.sampleLimit)))
        }
    }

    private func makeServices() throws -> [(name: String, service: any TimerService)] {
        var services: [(name: String, service: any TimerService)] = []
        if self.backend.includesPrecise {
            let configuration = PreciseTimer.Configuration(threadName: "example-ticker", spinMargin: self.spinMargin)
            do {
                services.append(("PreciseTimer", try PreciseTimer(configuration: configuration)))
            } catch let error as PreciseTimerError where error.code == .invalidConfiguration {
                throw ValidationError("--spin-margin rejected by PreciseTimer: \(error)")
            }
        }
        if self.backend.includesDispatch {
            services.append(("Dispatch", DispatchReferenceTimer()))
        }
        if self.forAwait {
            let configuration = PreciseTimer.Configuration(threadName: "ticker-async", spinMargin: self.spinMargin)
            services.append((Self.forAwaitName, try PreciseTimer(configuration: configuration)))
        }
        return services
    }

    /// On standard output when it is a terminal (redrawn) or not (plain lines); under `--json`,
    /// on standard error only when that is a terminal, so the JSON stays clean.
    private func makeProgressLine(_ recorders: [LatencyRecorder]) -> ProgressLine? {
        let fileDescriptor = self.json ? STDERR_FILENO : STDOUT_FILENO
        let isTerminal = isatty(fileDescriptor) != 0
        if self.json && !isTerminal { return nil }
        return ProgressLine(
            recorders: recorders, fileDescriptor: fileDescriptor,
            style: isTerminal ? .terminal : .lines)
    }
}
