import PreciseTimerCalendar
import PreciseTimerCore
import Testing

/// The claims of the article "Replacing systemd timers and cron", each written from
/// `systemd-analyze calendar --base-time=…` (systemd 252) on the build machine: if this package
/// ever answers otherwise, the article is wrong.
@Suite("The article Replacing systemd timers and cron")
struct ReplacingCronArticleTests {
    private func instant(_ seconds: Int64) -> WallClockInstant {
        WallClockInstant(nanosecondsSinceEpoch: seconds * 1_000_000_000)
    }

    @Test("Europe/Berlin 2027: 02:30 is skipped on March 28 and runs once on October 31; 02:00/20 runs three times")
    func daylightSaving() throws {
        let daily = try CalendarSchedule("*-*-* 02:30 Europe/Berlin")
        // After 2027-03-27T12:00Z: 2027-03-29T00:30Z (02:30 CEST), none on the 28th.
        #expect(daily.next(after: self.instant(1_806_148_800)) == self.instant(1_806_280_200))
        // After 2027-10-30T12:00Z: 2027-10-31T00:30Z (the first 02:30), then 2027-11-01T01:30Z.
        let first = try #require(daily.next(after: self.instant(1_824_897_600)))
        #expect(first == self.instant(1_824_942_600))
        #expect(daily.next(after: first) == self.instant(1_825_032_600))

        let steps = try CalendarSchedule("*-*-* 02:00/20 Europe/Berlin")
        var answers: [WallClockInstant] = []
        var after = self.instant(1_824_940_200)  // 2027-10-30T23:50Z
        for _ in 0..<4 {
            after = try #require(steps.next(after: after))
            answers.append(after)
        }
        // 02:00, 02:20, 02:40 CEST, then the next day's 02:00 CET: not again in the repeated hour.
        #expect(answers == [1_824_940_800, 1_824_942_000, 1_824_943_200, 1_825_030_800].map(self.instant))
    }

    @Test(
        "the cron translations normalize as systemd-analyze writes them",
        arguments: [
            ("*:0/5", "*-*-* *:00/5:00"), ("hourly", "*-*-* *:00:00"), ("daily", "*-*-* 00:00:00"),
            ("Mon..Fri 03:00", "Mon..Fri *-*-* 03:00:00"), ("Sun 04:30", "Sun *-*-* 04:30:00"),
            ("00/2:00", "*-*-* 00/2:00:00"), ("08..18:00", "*-*-* 08..18:00:00"),
            ("Mon..Fri 09..17:00/15", "Mon..Fri *-*-* 09..17:00/15:00"), ("monthly", "*-*-01 00:00:00"),
            ("yearly", "*-01-01 00:00:00"), ("Sun 00:00", "Sun *-*-* 00:00:00"), ("weekly", "Mon *-*-* 00:00:00"),
        ])
    func cronTranslations(_ specification: String, _ normalized: String) throws {
        #expect(try CalendarSchedule(specification).description == normalized)
    }
}
