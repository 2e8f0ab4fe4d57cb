import Foundation
import PreciseTimerCalendar
import PreciseTimerCore
import Testing

/// Every row of `Fixtures/timer-units.tsv` (written by `scripts/timer-unit-oracle` from
/// `systemd-analyze verify`): where systemd loads every line, ``TimerUnit`` accepts the file;
/// where systemd warns about a line and ignores it, ``TimerUnit`` refuses the file at that line;
/// where systemd refuses the unit for want of a trigger, so does ``TimerUnit``.
@Suite("systemd's verdicts on timer units")
struct TimerUnitOracleTests {
    struct Row {
        var text: String
        /// nil: systemd took every line; -1: it refused the unit for want of a trigger.
        var line: Int?
        var message: String
    }

    static func rows() throws -> [Row] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/timer-units.tsv")
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("# systemd-analyze") else { return nil }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 3 else { return nil }
            let verdict: Int? =
                switch fields[1] {
                case "OK": nil
                case "NOTRIGGER": -1
                default: Int(fields[1].dropFirst("LINE:".count))
                }
            return Row(text: TimeSpanOracleTests.unescape(fields[0]), line: verdict, message: fields[2])
        }
    }

    /// The last physical line an error names: 7 in "line 7: …" and in "lines 4-7: …".
    static func lastLine(of error: PreciseTimerError) -> Int? {
        guard let detail = error.detail, let colon = detail.firstIndex(of: ":") else { return nil }
        let place = detail[..<colon]
        guard place.hasPrefix("line") else { return nil }
        return place.split(whereSeparator: { $0 == " " || $0 == "-" }).last.flatMap { Int($0) }
    }

    @Test("every fixture row: accepted, refused at systemd's line, or refused for want of a trigger")
    func everyRow() throws {
        let rows = try Self.rows()
        #expect(rows.count > 350)
        var mismatches: [String] = []
        var divergences = 0
        for row in rows {
            let parsed = Result { () throws(PreciseTimerError) in try TimerUnit(row.text) }
            let context = row.text.debugDescription
            switch (parsed, row.line) {
            case (.success, .none):
                break
            case (.failure(let error), .none):
                // On purpose: infinity (no Duration means never) and % specifiers (no unit name
                // to expand them from), which systemd takes.
                let detail = error.detail ?? ""
                if detail.contains("infinity") || detail.contains("the specifier") {
                    divergences += 1
                } else {
                    mismatches.append("\(context): refused (\(error)), systemd takes it")
                }
            case (.success, .some(let line)):
                // On purpose: [Unit] and [Install] are skipped, their keys unchecked.
                if row.message.contains("in section [Unit]") || row.message.contains("in section [Install]") {
                    divergences += 1
                } else {
                    mismatches.append("\(context): accepted, systemd: line \(line): \(row.message)")
                }
            case (.failure(let error), .some(-1)):
                if error.detail?.hasPrefix("no trigger") != true {
                    mismatches.append("\(context): \(error), systemd: no trigger")
                }
            case (.failure(let error), .some(let line)):
                let detail = error.detail ?? ""
                let onPurpose = detail.contains("infinity") || detail.contains("the specifier")
                if row.message.contains("in section [Unit]") || row.message.contains("in section [Install]") {
                    divergences += 1
                } else if onPurpose, let ours = Self.lastLine(of: error), ours < line {
                    // Refused on purpose at a line before the one systemd warns about.
                    divergences += 1
                } else if error.code != .invalidSchedule || Self.lastLine(of: error) != line {
                    mismatches.append("\(context): \(error), systemd: line \(line): \(row.message)")
                }
            }
        }
        #expect(
            mismatches.isEmpty,
            "\(mismatches.count) mismatches, first: \(mismatches.prefix(20).joined(separator: "\n"))")
        // Only the documented divergences above, and few of them (infinity, `%i`, keys in [Unit]).
        #expect(divergences < rows.count / 10, "\(divergences) divergences")
    }
}
