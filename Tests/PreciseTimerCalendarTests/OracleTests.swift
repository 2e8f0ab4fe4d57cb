import PreciseTimerCalendar
import PreciseTimerCore
import Testing

/// Every row of `Fixtures/oracle.tsv` (written by `scripts/calendar-oracle` from
/// `systemd-analyze calendar --base-time=@BASE --iterations=5 SPEC`, TZ=UTC): the normalized
/// form or the refusal, and the next five elapses, checked against ``CalendarSchedule``.
@Suite("systemd's answers")
struct OracleTests {
    /// The elapses `scripts/calendar-oracle` asks systemd for per row (its `--iterations`).
    private static let iterations = 5

    @Test("every fixture row: normalized form, refusal, next five elapses")
    func everyRow() throws {
        let rows = try OracleFixture.rows()
        #expect(rows.count > 10_000)
        self.check(rows)
    }

    @Test("specifications without a zone, in local zones with DST (TZ=Europe/Berlin, New York, Lord Howe, Dublin)")
    func localZones() throws {
        let rows = try OracleFixture.rows(file: "oracle-local.tsv")
        #expect(rows.count > 1_000)
        self.check(rows)
    }

    private func check(_ rows: [OracleFixture.Row]) {
        var mismatches: [String] = []
        var schedules: [String: Result<CalendarSchedule, any Error>] = [:]
        for row in rows {
            let key = (row.localZone ?? "") + "\t" + row.spec
            let parsed =
                schedules[key]
                ?? Result {
                    try row.localZone.map { try CalendarSchedule(row.spec, localTimeZone: $0) }
                        ?? CalendarSchedule(row.spec)
                }
            schedules[key] = parsed
            switch (parsed, row.normalized) {
            case (.failure(let error), .none):
                let timerError = error as? PreciseTimerError
                if timerError?.code != .invalidSchedule || timerError?.value != row.spec {
                    mismatches.append("\(row.spec): wrong error \(error)")
                }
            case (.failure(let error), .some(let normalized)):
                mismatches.append("\(row.spec): refused (\(error)), systemd says \(normalized)")
            case (.success(let schedule), .none):
                mismatches.append("\(row.spec): accepted as \(schedule), systemd refuses it")
            case (.success(let schedule), .some(let normalized)):
                if normalized != "GAVE-UP" && schedule.description != normalized {
                    mismatches.append("\(row.spec): normalized \(schedule.description), systemd \(normalized)")
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
                    mismatches.append(
                        "\(row.localZone ?? "UTC"): \(row.spec) after \(row.base): \(answers) systemd \(expected)")
                }
            }
        }
        #expect(
            mismatches.isEmpty,
            "\(mismatches.count) mismatches, first: \(mismatches.prefix(20).joined(separator: "\n"))")
    }
}
