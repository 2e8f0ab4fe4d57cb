/// The one table the benchmark prints: sections of rows, each with a target verdict when the
/// issue sets one.
struct Report {
    struct Row {
        var cells: [String]
        var verdict: Bool?
        var note: String = ""
    }

    struct Section {
        var title: String
        var header: [String]
        var rows: [Row] = []
    }

    var sections: [Section] = []
    var targets: [(String, Bool)] = []

    mutating func target(_ name: String, _ met: Bool) {
        self.targets.append((name, met))
    }

    func render() -> String {
        var lines: [String] = []
        for section in self.sections {
            lines.append("")
            lines.append("## \(section.title)")
            let header = section.header + ["target"]
            let cells = section.rows.map { row in
                row.cells + [row.verdict.map { $0 ? "✅" : "❌" } ?? "" + (row.note.isEmpty ? "" : " \(row.note)")]
            }
            let widths = header.indices.map { column in
                ([header] + cells).map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0
            }
            func line(_ values: [String]) -> String {
                values.enumerated().map { index, value in
                    let padding = String(repeating: " ", count: max(widths[index] - value.count, 0))
                    return index == 0 ? value + padding : padding + value
                }.joined(separator: " | ")
            }
            lines.append(line(header))
            lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "-|-"))
            lines += cells.map(line)
        }
        lines.append("")
        lines.append("## Targets")
        for (name, met) in self.targets {
            lines.append("\(met ? "✅" : "❌") \(name)")
        }
        return lines.joined(separator: "\n")
    }
}

/// Number formatting for the table.
enum Format {
    static func micro(_ nanoseconds: Double) -> String {
        nanoseconds.magnitude >= 100_000
            ? String(Int((nanoseconds / 1_000).rounded())) : String(format1(nanoseconds / 1_000))
    }

    static func nano(_ nanoseconds: Double) -> String {
        String(Int(nanoseconds.rounded()))
    }

    static func ratio(_ value: Double) -> String {
        value.isFinite ? format2(value) + "×" : "–"
    }

    static func format1(_ value: Double) -> String {
        let scaled = (value * 10).rounded() / 10
        return "\(scaled)"
    }

    static func format2(_ value: Double) -> String {
        let scaled = (value * 100).rounded() / 100
        return "\(scaled)"
    }
}
