/// Renders summaries as a fixed-width text table, one row per backend, times in microseconds.
///
/// ```
/// backend        ticks  missed  p50 µs  p90 µs  p99 µs  max µs  drift µs
/// -------------  -----  ------  ------  ------  ------  ------  --------
/// PreciseTimer    2999       0    52.1    60.3   101.7   412.9      48.0
/// ```
struct SummaryTable {
    /// The rows to render.
    let summaries: [TickerSummary]

    private static let header = ["backend", "ticks", "missed", "p50 µs", "p90 µs", "p99 µs", "max µs", "drift µs"]

    /// The table, with a header, a rule, a row per backend and, when the sample storage filled
    /// up, a note saying how many ticks the percentiles cover.
    var text: String {
        let rows = self.summaries.map(Self.cells)
        let widths = Self.header.indices.map { column in
            ([Self.header] + rows).map { $0[column].count }.max() ?? 0
        }
        var lines = [
            Self.line(Self.header, widths), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "),
        ]
        lines += rows.map { Self.line($0, widths) }
        for summary in self.summaries where summary.samples < summary.ticks {
            lines.append("\(summary.backend): percentiles over the first \(summary.samples) of \(summary.ticks) ticks")
        }
        return lines.joined(separator: "\n")
    }

    private static func cells(_ summary: TickerSummary) -> [String] {
        let lateness = summary.lateness
        return [
            summary.backend, "\(summary.ticks)", "\(summary.missed)",
            self.microseconds(lateness?.p50), self.microseconds(lateness?.p90), self.microseconds(lateness?.p99),
            self.microseconds(lateness?.max), self.microseconds(summary.driftNanoseconds),
        ]
    }

    /// The first column left-aligned, numbers right-aligned.
    private static func line(_ cells: [String], _ widths: [Int]) -> String {
        zip(cells, widths).enumerated().map { column, pair in
            let (cell, width) = pair
            let padding = String(repeating: " ", count: max(0, width - cell.count))
            return column == 0 ? cell + padding : padding + cell
        }.joined(separator: "  ")
    }

    /// Nanoseconds as microseconds with one decimal, `-` when there is no value.
    static func microseconds(_ nanoseconds: Int64?) -> String {
        guard let nanoseconds else { return "-" }
        let tenths = (nanoseconds.magnitude + 50) / 100  // Round half away from zero, to 0.1 µs.
        let sign = nanoseconds < 0 && tenths > 0 ? "-" : ""
        return "\(sign)\(tenths / 10).\(tenths % 10)"
    }
}
