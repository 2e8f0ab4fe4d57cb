import Dispatch
import PreciseTimer
import PreciseTimerReference
import Synchronization

import Glibc

/// What `--json` prints: the run's settings, how it ended, and a summary per backend.
struct RunReport: Codable {
    var intervalNanoseconds: Int64
    var policy: String
    var spinMarginNanoseconds: Int64
    var durationNanoseconds: Int64?
    var elapsedNanoseconds: Int64
    /// Whether Ctrl-C ended the run early.
    var interrupted: Bool
    var results: [TickerSummary]
}

/// One backend's results; times in nanoseconds.
struct TickerSummary: Codable {
    struct Lateness: Codable { var p50, p90, p99, max: Int64 }
    var backend: String
    /// Handler calls.
    var ticks: Int
    /// Periods skipped (the sum of `Tick.missed`).
    var missed: UInt64
    /// How many ticks the percentiles cover (all unless the storage filled up).
    var samples: Int
    var lateness: Lateness?
    /// The last tick's distance from its place on the grid.
    var driftNanoseconds: Int64?
}

/// One ticker's lateness samples, measured against the run's own grid, `origin + k·interval`.
/// `record` runs on the timer's thread and never allocates: the storage is reserved up front.
final class Recorder: Sendable {
    private struct State {
        var samples: [Int64] = []
        var ticks = 0
        var missed: UInt64 = 0
        var last: Int64 = 0
        var isClosed = false
    }

    let name: String
    private let origin: MonotonicInstant
    private let interval: Int64
    private let state: Mutex<State>

    init(name: String, origin: MonotonicInstant, interval: Duration, capacity: Int) {
        self.name = name
        self.origin = origin
        self.interval = interval / .nanoseconds(1) > 0 ? Int64(interval / .nanoseconds(1)) : 1
        var state = State()
        state.samples.reserveCapacity(capacity)
        self.state = Mutex(state)
    }

    func record(_ tick: Tick) {
        self.state.withLock { state in
            guard !state.isClosed else { return }
            // This call answers period k = calls so far + every period skipped, this one's included.
            state.ticks += 1
            state.missed += tick.missed
            let period = Int64(state.ticks) + Int64(clamping: state.missed)
            state.last = tick.firedAt.nanoseconds - (self.origin.nanoseconds + period * self.interval)
            if state.samples.count < state.samples.capacity { state.samples.append(state.last) }
        }
    }

    /// Ignores later ticks (a Dispatch handler already queued), so the summary is a fixed set.
    func close() { self.state.withLock { $0.isClosed = true } }

    func summary() -> TickerSummary {
        let (samples, ticks, missed, last) = self.state.withLock { ($0.samples, $0.ticks, $0.missed, $0.last) }
        let sorted = samples.sorted()
        // Nearest rank: the smallest sample with at least `percent`% of the samples at or below it.
        func rank(_ percent: Int) -> Int64 { sorted[max((sorted.count * percent + 99) / 100, 1) - 1] }
        return TickerSummary(
            backend: self.name, ticks: ticks, missed: missed, samples: sorted.count,
            lateness: sorted.isEmpty ? nil : .init(p50: rank(50), p90: rank(90), p99: rank(99), max: sorted.last!),
            driftNanoseconds: ticks > 0 ? last : nil)
    }
}

/// One run: a repeating timer per backend, all at once, until the duration passes or Ctrl-C.
struct TickerRun {
    let command: TickerCommand

    func run() throws -> RunReport {
        let interval = self.command.interval, policy = self.command.policy.missedTicks
        let finished = DispatchSemaphore(value: 0)
        // Ctrl-C: SIGINT ignored by the process, delivered as an event on a queue. Blocked before
        // the services start, so their threads inherit the mask and never take it themselves.
        signal(SIGINT, SIG_IGN)
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGINT)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        let interrupted = Atomic(false)
        let sigint = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        sigint.setEventHandler {
            interrupted.store(true, ordering: .relaxed)
            finished.signal()
        }
        sigint.activate()

        // Room for one sample per period, plus slack; at most 4M (32 MB, over an hour at 1 ms).
        let periods = self.command.duration / interval
        let capacity = Int(min(periods * 1.01 + 16, 4_000_000))
        let startedAt = MonotonicInstant.now()
        var services: [any TimerService] = []
        var recorders: [Recorder] = []
        var loops: [Task<Void, Never>] = []
        /// Starts one backend's ticker on the grid `now + k·interval`, feeding a new recorder.
        func start(_ name: String, _ service: any TimerService, forAwait: Bool = false) throws {
            let origin = MonotonicInstant.now()
            let recorder = Recorder(name: name, origin: origin, interval: interval, capacity: capacity)
            services.append(service)
            recorders.append(recorder)
            if forAwait {
                // The async way: shutting the service down at the end finishes the sequence.
                let ticks = try service.ticks(every: interval, missedTicks: policy)
                loops.append(Task.detached { for await tick in ticks { recorder.record(tick) } })
            } else {
                try service.scheduleRepeating(
                    id: "ticker", every: interval, startingAt: origin.advanced(by: interval),
                    options: TimerOptions(missedTicks: policy)
                ) { tick in recorder.record(tick) }
            }
        }
        func precise(_ threadName: String) throws -> PreciseTimer {
            try PreciseTimer(configuration: .init(threadName: threadName, spinMargin: self.command.spinMargin))
        }

        if self.command.backend != .dispatch { try start("PreciseTimer", try precise("example-ticker")) }
        if self.command.backend != .precise { try start("Dispatch", DispatchReferenceTimer()) }
        if self.command.forAwait { try start("PreciseTimer for await", try precise("ticker-async"), forAwait: true) }

        _ = finished.wait(timeout: .now() + .nanoseconds(Int(self.command.duration / .nanoseconds(1))))
        for recorder in recorders { recorder.close() }
        let elapsed = MonotonicInstant.now() - startedAt
        for service in services { service.shutdown() }
        for loop in loops { loop.cancel() }
        sigint.cancel()

        return RunReport(
            intervalNanoseconds: Int64(interval / .nanoseconds(1)),
            policy: self.command.policy.rawValue,
            spinMarginNanoseconds: Int64(self.command.spinMargin / .nanoseconds(1)),
            durationNanoseconds: Int64(self.command.duration / .nanoseconds(1)),
            elapsedNanoseconds: Int64(elapsed / .nanoseconds(1)),
            interrupted: interrupted.load(ordering: .relaxed),
            results: recorders.map { $0.summary() })
    }
}
