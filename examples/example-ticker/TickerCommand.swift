import ArgumentParser
import Foundation
import PreciseTimer

/// `swift run example-ticker`: a 1 ms ticker on `PreciseTimer` and one on `DispatchReferenceTimer`,
/// running at the same time, with a live progress line and a lateness table at the end.
@main
struct TickerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example-ticker",
        abstract: "Compare a periodic timer on PreciseTimer (libevent) with one on Dispatch.",
        discussion: """
            Both tickers run at the same time, each on its own service. Lateness is the time from a \
            tick's deadline to its handler call; drift is the last tick's distance from its place on \
            the fixed-rate grid (start + k·interval). Durations take a unit: ns, us (or µs), ms, s. \
            Ctrl-C stops the run and prints the summary so far.
            """
    )

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("The ticker period, e.g. 250us, 1ms, 0.5s. (default: 1ms)", valueName: "duration"),
        transform: DurationParsing.parseInterval)
    var interval: Duration?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "How long to run, e.g. 10s, 500ms; a bare number is seconds. (default: 3s)", valueName: "duration"),
        transform: DurationParsing.parseLength)
    var duration: Duration?

    @Option(
        parsing: .unconditional, help: "Stop after this many ticks per backend, instead of after a duration.",
        transform: Self.parsePositive)
    var count: Int?

    @Option(help: "Which service to run.")
    var backend: TickerBackend = .both

    @Option(help: "What a late ticker does about the periods it missed.")
    var policy: TickerPolicy = .skip

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "PreciseTimer only: wake this long before each deadline and spin until it, e.g. 50us. "
                + "(default: 0, sleep until the deadline)",
            valueName: "duration"),
        transform: DurationParsing.parse)
    var spinMargin: Duration = .zero

    @Flag(help: "Print the summary as JSON instead of a table.")
    var json = false

    @Flag(
        name: .customLong("async"),
        help: "Also run a PreciseTimer ticker driven by `for await tick in timers.ticks(every:)`.")
    var forAwait = false

    func validate() throws {
        if self.duration != nil, self.count != nil {
            throw ValidationError("Use either --duration or --count, not both.")
        }
    }

    func run() throws {
        let run = TickerRun(
            interval: self.interval ?? .milliseconds(1),
            length: self.count.map { .count($0) } ?? .duration(self.duration ?? .seconds(3)),
            backend: self.backend,
            policy: self.policy,
            spinMargin: self.spinMargin,
            json: self.json,
            forAwait: self.forAwait
        )
        let report = try run.run()
        if self.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(Self.heading(report))
            print(SummaryTable(summaries: report.results).text)
        }
    }

    /// `1ms ticker, policy skip, ran 3.00 s` (`interrupted after …` on Ctrl-C).
    private static func heading(_ report: RunReport) -> String {
        let centiseconds = report.elapsedNanoseconds / 10_000_000
        let elapsed = "\(centiseconds / 100).\(centiseconds % 100 < 10 ? "0" : "")\(centiseconds % 100) s"
        var parts = [
            "\(DurationParsing.format(.nanoseconds(report.intervalNanoseconds))) ticker",
            "policy \(report.policy)",
        ]
        if report.spinMarginNanoseconds > 0 {
            parts.append("spin margin \(DurationParsing.format(.nanoseconds(report.spinMarginNanoseconds)))")
        }
        parts.append(report.interrupted ? "interrupted after \(elapsed)" : "ran \(elapsed)")
        return "\n" + parts.joined(separator: ", ")
    }

    /// A whole number of at least 1 (`--count`).
    @Sendable
    private static func parsePositive(_ text: String) throws(InvalidValue) -> Int {
        guard let value = Int(text) else {
            throw InvalidValue(description: "not a whole number")
        }
        guard value > 0 else {
            throw InvalidValue(description: "must be at least 1")
        }
        return value
    }
}
