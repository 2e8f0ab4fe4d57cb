import ArgumentParser
import Dispatch
import Foundation
import PreciseTimer
import PreciseTimerReference

/// `swift run example-ticker`: a ticker on `PreciseTimer` and one on `DispatchReferenceTimer`,
/// side by side, with a live progress line and a lateness table at the end.
@main
struct TickerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example-ticker",
        abstract: "Run a periodic timer on PreciseTimer (libevent) and on Dispatch, side by side, and compare lateness.",
        discussion: "Durations take a unit: 100ns, 250us, 1ms, 0.5s (a bare number is seconds). Ctrl-C prints the summary so far."
    )

    enum Backend: String, ExpressibleByArgument, CaseIterable {
        case precise, dispatch, both
    }

    enum Policy: String, ExpressibleByArgument, CaseIterable {
        case skip, burst, delay

        var missedTicks: MissedTickPolicy {
            switch self {
            case .skip: .skip
            case .burst: .burst
            case .delay: .delay
            }
        }
    }

    @Option(help: "The ticker's period.")
    var interval: String = "1ms"

    @Option(help: "How long to run, in seconds (ignored with --count).")
    var duration: Double = 3

    @Option(help: "Stop after this many ticks per backend instead of after --duration.")
    var count: Int?

    @Option(help: "Which service to run: \(Backend.allCases.map(\.rawValue).joined(separator: ", ")).")
    var backend: Backend = .both

    @Option(help: "What to do about missed periods: \(Policy.allCases.map(\.rawValue).joined(separator: ", ")).")
    var policy: Policy = .skip

    @Option(help: "PreciseTimer spin finish: wake this much before each deadline and spin (e.g. 100us).")
    var spinMargin: String = "0ns"

    @Flag(help: "Print the summary as JSON instead of a table.")
    var json = false

    @Option(help: "Leak-check mode: run N schedule/cancel/fire cycles on PreciseTimer, shut down, exit.")
    var churn: Int?

    func validate() throws {
        let period = try self.parsed(self.interval, "--interval")
        guard period > .zero else { throw ValidationError("--interval must be greater than zero") }
        _ = try self.parsed(self.spinMargin, "--spin-margin")
        guard self.duration.isFinite, self.duration > 0, self.duration <= 86_400 else {
            throw ValidationError("--duration must be a number of seconds in (0, 86400], got \(self.duration)")
        }
        if let count = self.count, count <= 0 || count > 100_000_000 {
            throw ValidationError("--count must be between 1 and 100000000, got \(count)")
        }
        if let churn = self.churn, churn <= 0 {
            throw ValidationError("--churn must be positive, got \(churn)")
        }
    }

    private func parsed(_ text: String, _ flag: String) throws -> Duration {
        do {
            return try DurationParsing.parse(text)
        } catch {
            throw ValidationError("\(flag): \(error)")
        }
    }

    func run() throws {
        if let cycles = self.churn {
            let report = try Churn(cycles: cycles).run()
            print(report)
            return
        }
        let interval = try DurationParsing.parse(self.interval)
        let configuration = PreciseTimer.Configuration(spinMargin: try DurationParsing.parse(self.spinMargin))
        var services: [(recorder: LatencyRecorder, service: any TimerService)] = []
        let capacity = self.count ?? Int(min(self.duration / max(interval / .seconds(1), 1e-9) * 1.1 + 16, 50_000_000))
        if self.backend != .dispatch {
            let precise: any TimerService
            do {
                precise = try PreciseTimer(configuration: configuration)
            } catch {
                throw ValidationError("cannot start PreciseTimer: \(error)")
            }
            services.append((LatencyRecorder(name: "PreciseTimer", interval: interval, capacity: capacity), precise))
        }
        if self.backend != .precise {
            services.append((LatencyRecorder(name: "Dispatch", interval: interval, capacity: capacity),
                             DispatchReferenceTimer()))
        }

        let finished = DispatchSemaphore(value: 0)
        let interrupted = Interruption()
        let limit = self.count
        for (recorder, service) in services {
            try service.scheduleRepeating(id: "ticker", every: interval, options: .init(missedTicks: self.policy.missedTicks)) {
                tick in
                if recorder.record(tick) == limit {
                    service.cancel(tick.id)
                    finished.signal()
                }
            }
        }

        let progress = ProgressLine(recorders: services.map(\.recorder), enabled: !self.json)
        progress.start()
        interrupted.onSignal { finished.signal() }
        if limit != nil {
            for _ in services where !interrupted.happened { finished.wait() }
        } else {
            _ = finished.wait(timeout: .now() + .nanoseconds(Int(self.duration * 1e9)))
        }
        for (_, service) in services { service.shutdown() }
        progress.stop()

        let summaries = services.map { $0.recorder.summary() }
        if self.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let data = try encoder.encode(RunReport(interval: "\(interval)", policy: self.policy.rawValue,
                                                    interrupted: interrupted.happened, results: summaries))
            print(String(decoding: data, as: UTF8.self))
        } else {
            print("\n\(interrupted.happened ? "interrupted; " : "")interval \(interval), policy \(self.policy.rawValue)")
            print(TickerSummary.table(summaries))
        }
    }
}

/// What `--json` prints.
struct RunReport: Codable {
    var interval: String
    var policy: String
    var interrupted: Bool
    var results: [TickerSummary]
}
