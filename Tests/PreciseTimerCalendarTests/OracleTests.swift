import Testing

/// Every row of `Fixtures/oracle.tsv` (written by `scripts/calendar-oracle` from
/// `systemd-analyze calendar --base-time=@BASE --iterations=5 SPEC`, TZ=UTC): the normalized
/// form or the refusal, and the next five elapses, checked against ``CalendarSchedule``.
@Suite("systemd's answers")
struct OracleTests {
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
        let mismatches = OracleFixture.mismatches(in: rows)
        #expect(
            mismatches.isEmpty,
            "\(mismatches.count) mismatches, first: \(mismatches.prefix(20).joined(separator: "\n"))")
    }
}
