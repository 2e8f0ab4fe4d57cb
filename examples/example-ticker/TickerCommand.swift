import ArgumentParser
import Foundation
import PreciseTimer

/// `swift run example-ticker`: a 1 ms ticker on `PreciseTimer` and one on Dispatch, side by side,
/// and a lateness table at the end.
@main
struct TickerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example-ticker",
        abstract: "Compare a periodic timer on PreciseTimer (libevent) with one on Dispatch.",
        discussion: """
            The tickers run at the same time, each on its own service. Lateness is the time from a \
            tick's place on the run's grid (start + k·interval) to its handler call; drift is the \
            last tick's lateness. Durations take a unit: ns, us (or µs), ms, s. Ctrl-C stops the \
            run and prints the summary so far.
            """
    )

    @Option(
        help: ArgumentHelp("The ticker period, e.g. 250us, 1ms.", valueName: "duration"),
        transform: { try parseDuration($0, positive: true) })
    var interval: Duration = .milliseconds(1)

    @Option(
        help: ArgumentHelp("How long to run, e.g. 10s, 500ms; a bare number is seconds.", valueName: "duration"),
        transform: { try parseDuration($0, positive: true, bareUnit: "s") })
    var duration: Duration = .seconds(3)

    @Option(help: "Which service to run: precise, dispatch or both.")
    var backend: Backend = .both

    @Option(help: "What a late ticker does about missed periods: skip, burst or delay.")
    var policy: Policy = .skip

    @Option(
        help: ArgumentHelp(
            "PreciseTimer only: wake this long before each deadline and spin, e.g. 50us.",
            valueName: "duration"),
        transform: { try parseDuration($0) })
    var spinMargin: Duration = .zero

    @Flag(
        name: .customLong("async"),
        help: "Also run a PreciseTimer ticker driven by `for await tick in timers.ticks(every:)`.")
    var forAwait = false

    @Flag(help: "Print the summary as JSON instead of a table.")
    var json = false

    func run() throws {
        #if DEBUG
            // A debug build times the unoptimized compiler output, not the timers; stderr keeps `--json` clean.
            FileHandle.standardError.write(
                Data(
                    ("warning: debug build: lateness measures the compiler, not the timers; "
                        + "run `swift run -c release example-ticker`\n").utf8))
        #endif
        let report = try TickerRun(command: self).run()
        if self.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        let seconds = Double(report.elapsedNanoseconds) / 1e9
        print(
            "\n\(Int(self.interval / .microseconds(1))) µs ticker, policy \(report.policy), "
                + (report.interrupted ? "interrupted after" : "ran") + " \(String(format: "%.2f", seconds)) s")
        printTable(report.results)
    }
}

enum Backend: String, ExpressibleByArgument { case precise, dispatch, both }

enum Policy: String, ExpressibleByArgument {
    case skip, burst, delay
    var missedTicks: MissedTickPolicy {
        switch self {
        case .skip: .skip
        case .burst: .burst
        case .delay: .delay
        }
    }
}

/// Why a command-line value was rejected; ArgumentParser prints it after the flag and value.
struct InvalidValue: Error, CustomStringConvertible {
    let description: String
}

/// Parses `250us`, `1ms`, `0.5s` (units ns, us, µs, ms, s); a bare `0` needs no unit, and a bare
/// number takes `bareUnit` when one is given.
func parseDuration(_ text: String, positive: Bool = false, bareUnit: String? = nil) throws(InvalidValue) -> Duration {
    let units: [(suffix: String, nanoseconds: Double)] = [("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]
    var text = text
    if let bareUnit, let last = text.last, last.isNumber || last == "." { text += bareUnit }
    let unit = units.first { text.hasSuffix($0.suffix) } ?? (text == "0" ? ("", 1) : nil)
    guard let unit else {
        throw InvalidValue(description: "write a number and a unit, e.g. 250us, 1ms or 0.5s (units: ns, us, ms, s)")
    }
    let number = text.dropLast(unit.suffix.count)
    guard number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(number) else {
        throw InvalidValue(description: "'\(number)' is not a plain non-negative decimal number")
    }
    let nanoseconds = (value * unit.nanoseconds).rounded(.up)
    let limit = PreciseTimer.maximumDuration / .nanoseconds(1)
    guard nanoseconds <= limit else { throw InvalidValue(description: "too long; timers accept at most 146 years") }
    guard !positive || nanoseconds > 0 else { throw InvalidValue(description: "must be greater than zero") }
    return .nanoseconds(Int64(nanoseconds))
}

/// Prints one row per backend, times in microseconds with one decimal.
func printTable(_ summaries: [TickerSummary]) {
    func µs(_ ns: Int64?) -> String { ns.map { String(format: "%.1f", Double($0) / 1000) } ?? "-" }
    let header = ["backend", "ticks", "missed", "p50 µs", "p90 µs", "p99 µs", "max µs", "drift µs"]
    let rows =
        [header]
        + summaries.map { s in
            [
                s.backend, "\(s.ticks)", "\(s.missed)", µs(s.lateness?.p50), µs(s.lateness?.p90), µs(s.lateness?.p99),
                µs(s.lateness?.max), µs(s.driftNanoseconds),
            ]
        }
    let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
    for (index, row) in rows.enumerated() {
        let cells = zip(row, widths).enumerated().map { column, cell in
            let padding = String(repeating: " ", count: cell.1 - cell.0.count)
            return column == 0 ? cell.0 + padding : padding + cell.0
        }
        print(cells.joined(separator: "  "))
        if index == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
    }
}
