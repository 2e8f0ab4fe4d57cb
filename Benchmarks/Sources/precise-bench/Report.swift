/// The one table the benchmark prints: a label column, seven value columns, two ratio columns
/// and a target/note column. Each section starts with a row that names its columns, so that
/// every figure of the run sits in one grid (valid Markdown, pasted as is into the README).
struct Report: Sendable {
    /// Value columns per row.
    static let valueColumns = 7
    /// Ratio columns per row.
    static let ratioColumns = 2

    /// One row of the grid.
    struct Row: Sendable {
        /// Label, values, ratios, target: always `2 + valueColumns + ratioColumns` cells.
        var cells: [String]
        /// Whether this row names a section's columns.
        var isSectionHeader: Bool
    }

    /// A target the issue sets, with its verdict.
    struct Target: Codable, Sendable {
        /// Whether the figure meets the target.
        var met: Bool
        /// The target and the measured figure, in words.
        var text: String
    }

    /// The rows, in order.
    private(set) var rows: [Row] = []
    /// Every target checked, in order.
    private(set) var targets: [Target] = []

    /// Starts a section: a row with its title and the names of its value and ratio columns.
    mutating func section(_ title: String, values: [String], ratios: [String] = []) {
        self.rows.append(Row(cells: Self.cells(title, values, ratios, "target / note"), isSectionHeader: true))
    }

    /// Adds a row of figures.
    mutating func row(_ label: String, values: [String], ratios: [String] = [], note: String = "") {
        self.rows.append(Row(cells: Self.cells(label, values, ratios, note), isSectionHeader: false))
    }

    /// Adds a row for a contestant that did not run.
    mutating func skipped(_ label: String, reason: String) {
        self.row(label, values: ["skipped"], note: reason)
    }

    /// Records a target's verdict.
    /// - Parameters:
    ///   - short: The name shown in the row's target cell, e.g. `"p50"`.
    ///   - met: The verdict.
    ///   - text: The target and the figure, for the list under the table.
    /// - Returns: The cell text, e.g. `"p50 ✅"`.
    mutating func check(_ short: String, _ met: Bool, _ text: String) -> String {
        self.targets.append(Target(met: met, text: text))
        return "\(short) \(met ? "✅" : "❌")"
    }

    private static func cells(_ label: String, _ values: [String], _ ratios: [String], _ note: String) -> [String] {
        func padded(_ cells: [String], _ count: Int) -> [String] {
            Array((cells + Array(repeating: "", count: count)).prefix(count))
        }
        return [label] + padded(values, Self.valueColumns) + padded(ratios, Self.ratioColumns) + [note]
    }

    /// The grid as Markdown, columns aligned for a terminal (emoji counted two columns wide).
    func render() -> String {
        guard !self.rows.isEmpty else { return "" }
        let columnCount = self.rows[0].cells.count
        let texts = self.rows.map { row in
            row.isSectionHeader ? row.cells.enumerated().map { $0 == 0 ? "**\($1)**" : $1 } : row.cells
        }
        let widths = (0..<columnCount).map { column in
            texts.map { Self.displayWidth($0[column]) }.max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            let padded = cells.enumerated().map { column, text in
                let padding = String(repeating: " ", count: widths[column] - Self.displayWidth(text))
                // Label and note read left to right; figures line up on the right.
                return column == 0 || column == columnCount - 1 ? text + padding : padding + text
            }
            return "| " + padded.joined(separator: " | ") + " |"
        }
        let rule = widths.enumerated().map { column, width in
            column == 0 || column == columnCount - 1
                ? ":" + String(repeating: "-", count: width + 1) : String(repeating: "-", count: width + 1) + ":"
        }
        var lines = [line(texts[0]), "|" + rule.joined(separator: "|") + "|"]
        lines += texts.dropFirst().map(line)
        return lines.joined(separator: "\n")
    }

    private static func displayWidth(_ text: String) -> Int {
        text.reduce(0) { width, character in
            width + (character.unicodeScalars.first?.properties.isEmojiPresentation == true ? 2 : 1)
        }
    }
}
