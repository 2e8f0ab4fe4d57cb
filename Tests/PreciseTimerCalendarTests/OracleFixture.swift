import Foundation
import PreciseTimerCalendar
import PreciseTimerCore

/// The rows of `Fixtures/oracle.tsv`: spec, base (epoch seconds), normalized form or
/// `ERROR: …`, and the next elapses in epoch seconds ("never" when there are none).
struct OracleFixture {
    struct Row {
        /// The class of issue 21's defect 9 the row checks (`oracle-classes.tsv`); nil elsewhere.
        var group: String?
        /// The process's local zone (`TZ`) when systemd computed the row; nil: UTC.
        var localZone: String?
        /// `TZDIR` when systemd computed the row; nil: unset.
        var zoneDirectory: String?
        var spec: String
        var base: Int64
        /// nil: systemd refused the specification; "GAVE-UP": it accepted it but gave up on its
        /// first elapse (the row's elapses are then "never").
        var normalized: String?
        /// Whole seconds; systemd stops at the first "never".
        var elapses: [String]
    }

    /// The elapses `scripts/calendar-oracle` asks systemd for per row (its `--iterations`).
    static let iterations = 5

    static func rows(file: String = "oracle.tsv") throws -> [Row] {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        // An absolute path: a table written elsewhere (`scripts/calendar-oracle --differential`).
        let url = file.hasPrefix("/") ? URL(fileURLWithPath: file) : directory.appendingPathComponent(file)
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            var fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            // oracle-classes.tsv starts each row with the class, the local zone and TZDIR ("-": unset).
            var group: String?
            var zoneDirectory: String?
            if fields.count == 7 {
                group = fields.removeFirst()
                zoneDirectory = fields.remove(at: 1)
                if zoneDirectory == "-" { zoneDirectory = nil }
            }
            // oracle-local.tsv starts each row with the local zone.
            let localZone = fields.count == 5 ? fields.removeFirst() : nil
            guard fields.count == 4, let base = Int64(fields[1]) else { return nil }
            let normalized = fields[2].hasPrefix("ERROR:") ? nil : fields[2]
            let elapses =
                fields[3].isEmpty
                ? []
                : fields[3].split(separator: ",").map { value in
                    // Fractional elapses are compared at whole seconds.
                    String(value.split(separator: ".")[0])
                }
            return Row(
                group: group, localZone: localZone, zoneDirectory: zoneDirectory, spec: fields[0], base: base,
                normalized: normalized, elapses: elapses)
        }
    }

    /// Each row `CalendarSchedule` answers differently from systemd, described; empty when all agree.
    static func mismatches(in rows: [Row]) -> [String] {
        var mismatches: [String] = []
        var schedules: [String: Result<CalendarSchedule, any Error>] = [:]
        for row in rows {
            let key = [row.localZone ?? "", row.zoneDirectory ?? "", row.spec].joined(separator: "\t")
            let parsed =
                schedules[key]
                ?? Result {
                    try row.localZone.map {
                        try CalendarSchedule(row.spec, localTimeZone: $0, zoneDirectory: row.zoneDirectory)
                    } ?? CalendarSchedule(row.spec)
                }
            schedules[key] = parsed
            let context = "\(row.localZone ?? "UTC")\(row.zoneDirectory.map { " TZDIR=\($0)" } ?? ""): \(row.spec)"
            switch (parsed, row.normalized) {
            case (.failure(let error), .none):
                let timerError = error as? PreciseTimerError
                if timerError?.code != .invalidSchedule || timerError?.value != row.spec {
                    mismatches.append("\(context): wrong error \(error)")
                }
            case (.failure(let error), .some(let normalized)):
                mismatches.append("\(context): refused (\(error)), systemd says \(normalized)")
            case (.success(let schedule), .none):
                mismatches.append("\(context): accepted as \(schedule), systemd refuses it")
            case (.success(let schedule), .some(let normalized)):
                // One entry per row that differs, so a count of them counts rows.
                var problems: [String] = []
                if normalized != "GAVE-UP" && schedule.description != normalized {
                    problems.append("normalized \(schedule.description), systemd \(normalized)")
                }
                var base = WallClockInstant(nanosecondsSinceEpoch: row.base * 1_000_000_000)
                // Fewer elapses than asked for, with no "never": systemd found no more, so the
                // schedule must end there too (one step more answers nil).
                var expected = row.elapses.isEmpty ? ["never"] : row.elapses
                if expected.count < Self.iterations, expected.last != "never" {
                    expected.append("never")
                }
                var answers: [String] = []
                for _ in 0..<expected.count {
                    guard let next = schedule.next(after: base) else {
                        answers.append("never")
                        break
                    }
                    // systemd prints elapses in whole seconds.
                    answers.append(String(next.nanosecondsSinceEpoch / 1_000_000_000))
                    base = next
                }
                if answers != expected {
                    problems.append("after \(row.base): \(answers) systemd \(expected)")
                }
                if !problems.isEmpty { mismatches.append("\(context): " + problems.joined(separator: "; ")) }
            }
        }
        return mismatches
    }
}
