/// One backend's results: lateness percentiles in microseconds, ticks, missed periods, and the
/// end-of-run drift (the last tick's distance from where the grid says it belongs).
struct TickerSummary: Codable, Sendable {
    var backend: String
    var ticks: Int
    var missed: UInt64
    var p50Microseconds: Double
    var p90Microseconds: Double
    var p99Microseconds: Double
    var maxMicroseconds: Double
    var driftMicroseconds: Double

    /// A fixed-width table, one row per backend.
    static func table(_ rows: [TickerSummary]) -> String {
        let header = ["backend", "ticks", "missed", "p50 µs", "p90 µs", "p99 µs", "max µs", "drift µs"]
        let cells = rows.map { row in
            [row.backend, "\(row.ticks)", "\(row.missed)", Self.format(row.p50Microseconds),
             Self.format(row.p90Microseconds), Self.format(row.p99Microseconds), Self.format(row.maxMicroseconds),
             Self.format(row.driftMicroseconds)]
        }
        let widths = header.indices.map { column in
            ([header] + cells).map { $0[column].count }.max() ?? 0
        }
        func line(_ values: [String]) -> String {
            zip(values, widths).enumerated().map { index, pair in
                let padding = String(repeating: " ", count: pair.1 - pair.0.count)
                return index == 0 ? pair.0 + padding : padding + pair.0
            }.joined(separator: "  ")
        }
        let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
        return ([line(header), rule] + cells.map(line)).joined(separator: "\n")
    }

    private static func format(_ value: Double) -> String {
        String(Int(value.rounded()))
    }
}
