import PreciseTimerCalendar
import PreciseTimerCore
import PreciseTimerTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `CalendarSchedule.occurrences(after:notAfter:)`: its count must be the naive walk's, one
/// `next(after:)` after another, everywhere, and fast over years.
@Suite("CalendarSchedule catch-up")
struct CalendarCatchUpTests {
    private static func instant(_ seconds: Int) -> WallClockInstant {
        WallClockInstant(nanosecondsSinceEpoch: Int64(seconds) * 1_000_000_000)
    }

    /// The naive walk from `occurrence`: at most `limit` steps not after `instant`; the
    /// occurrences it passed and the last, and whether it stopped at the limit.
    private static func walk(
        _ schedule: CalendarSchedule, after occurrence: WallClockInstant, notAfter instant: WallClockInstant,
        limit: Int
    ) -> (passed: UInt64, latest: WallClockInstant?, full: Bool) {
        var passed: UInt64 = 0
        var latest: WallClockInstant?
        var base = occurrence
        while passed < limit, let next = schedule.next(after: base), next > base, next <= instant {
            passed += 1
            latest = next
            base = next
        }
        return (passed, latest, passed == limit)
    }

    /// Days since 1970-01-01 of a date (proleptic Gregorian).
    private static func days(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        return era * 146_097 + yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear - 719_468
    }

    @Test("generated specifications, bases around DST changes in five local zones and right/: the naive walk's count")
    func differential() throws {
        var generator = SpecificationGenerator(seed: 0xCA7C_0042)
        var random = SplitMix(seed: 0x5EED)
        let localZones = [
            "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Europe/Dublin", "right/Europe/Berlin",
        ]
        // Specifications that stress the changes themselves, then generated ones.
        var texts = [
            "*:*:0/1", "*:*:*", "*:0/7", "*-*-* 02:30", "*-*-* 02,03:*:0/20", "*:*:0.25/0.5", "hourly", "daily",
            "Sun *-*-* 01..03:*:0/10", "*-*~01 02:00..03:59:0/30", "*:*:0/1 CET", "*:0/5 CEST", "*:*:0/1 UTC",
            "*:*:0/1 right/UTC", "*:*:0/1 Asia/Kathmandu", "*:*:0/30 Australia/Lord_Howe", "*:0/2 Europe/Dublin",
        ]
        for _ in 0..<800 { texts.append(generator.next()) }
        var compared = 0
        var beyondDefault = 0
        var failures: [String] = []
        for (index, text) in texts.enumerated() {
            let zone = localZones[index % localZones.count]
            guard let schedule = try? CalendarSchedule(text, localTimeZone: zone) else { continue }
            for _ in 0..<5 {
                // A base in the months of the changes (northern and southern), 2025...2040, and
                // a gap of up to three days.
                let year = random.int(2025...2040)
                let month = [3, 4, 10, 11][random.int(0...3)]
                let start = Self.days(year, month, 1) * 86_400 + random.int(0...(31 * 86_400))
                let fraction = Int64(random.int(0...999_999_999))
                let occurrence = WallClockInstant(nanosecondsSinceEpoch: Int64(start) * 1_000_000_000 + fraction)
                var end = WallClockInstant(
                    nanosecondsSinceEpoch: occurrence.nanosecondsSinceEpoch + Int64(random.int(1...(3 * 86_400)))
                        * 1_000_000_000 + Int64(random.int(0...999_999_999)))
                var naive = Self.walk(schedule, after: occurrence, notAfter: end, limit: 400)
                if naive.full, let latest = naive.latest {
                    // A dense specification: compare up to the walk's last step.
                    end = latest
                    naive = (naive.passed, latest, false)
                }
                let counted = schedule.occurrences(after: occurrence, notAfter: end)
                compared += 1
                // Past 64 the protocol's default implementation only bounds the count.
                if naive.passed > 64 { beyondDefault += 1 }
                if counted?.passed ?? 0 != naive.passed || counted?.latest != naive.latest {
                    failures.append(
                        "\(text) [TZ=\(zone)] after \(occurrence.nanosecondsSinceEpoch) not after "
                            + "\(end.nanosecondsSinceEpoch): counted \(String(describing: counted)), "
                            + "walked \(naive.passed) to \(String(describing: naive.latest))")
                }
            }
        }
        #expect(compared > 400)
        #expect(beyondDefault > 60)
        #expect(
            failures.isEmpty, "\(failures.count) of \(compared) differ:\n\(failures.prefix(20).joined(separator: "\n"))"
        )
    }

    /// Years of sparse specifications: many DST changes per call. The first one is a
    /// regression: from 2021-12-20 its search tries month 16, which `mktime` carries into
    /// April 2022 (daylight time) before the reset to January, and the daylight flag it kept
    /// sends the walk back to December for good (systemd gives up: "never").
    @Test("generated specifications over two years in eight zones: the naive walk's count")
    func longRanges() throws {
        var generator = SpecificationGenerator(seed: 77)
        let zones = [
            "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Europe/Dublin", "right/Europe/Berlin",
            "America/Santiago", "Asia/Tehran", "Africa/Casablanca",
        ]
        var texts = [("Fri..Sat 6,1..1,6/5-20,1..3/5,13..23/6 14..17/1,20:27/4 Europe/Berlin", 1_637_438_340)]
        for index in 0..<1500 { texts.append((generator.next(), 1_600_000_000 + index * 7919 % 100_000_000)) }
        var compared = 0
        var failures: [String] = []
        for (index, (text, start)) in texts.enumerated() {
            let zone = zones[index % zones.count]
            guard let schedule = try? CalendarSchedule(text, localTimeZone: zone) else { continue }
            let occurrence = Self.instant(start)
            let end = Self.instant(start + 2 * 365 * 86_400)
            let counted = schedule.occurrences(after: occurrence, notAfter: end)
            // Sparse ones only (the others have their tests): the walk is the cost here.
            if counted?.passed ?? 0 > 1000 { continue }
            let naive = Self.walk(schedule, after: occurrence, notAfter: end, limit: 1001)
            compared += 1
            if counted?.passed ?? 0 != naive.passed || counted?.latest != naive.latest {
                failures.append(
                    "\(text) [TZ=\(zone)] after \(start): counted \(String(describing: counted)), walked "
                        + "\(naive.passed) to \(String(describing: naive.latest))")
            }
        }
        #expect(compared > 40)
        #expect(failures.isEmpty, "\(failures.count) of \(compared) differ:\n\(failures.joined(separator: "\n"))")
    }

    /// systemd's search carries a value past the end of its field into the next one and keeps
    /// what it carried below the largest field that changed: `*:0/7` never fires at 00:00
    /// after a day that fired (23:56 → 23:63 → 00:03 → 00:07), `*:*:0/45` never at hh:00:00
    /// after the hour before fired, `0/5:00` not at 00:00 on the 1st after the month's last day,
    /// `*-*-05,16,19/10` not on January 5th (from December 29th it tries the 39th: January 8th).
    @Test("specifications whose carries skip matches: the naive walk's count, across days and months")
    func carries() throws {
        let texts = [
            "*:0/7", "*:*:0/45", "0/5:00", "0/5:0/7:0/45", "*:5/50", "*:*:0,0.5/45", "*:*:0.5/45", "*:*:0/0.7",
            "22,23:0/7", "1/7:*:0/45", "Mon..Fri 0/5:0/7", "*-*~03 0/5:0/7", "*:59:0/45", "23:59:0/45",
            "*:0,59:0/45", "*-*-01 0/7:00", "*-*-05,16,19/10 20:*", "*-*-1,2,19/5 17:19", "Fri *-*-5/5 12:00",
        ]
        var random = SplitMix(seed: 0xCA_441E5)
        var failures: [String] = []
        var compared = 0
        for (index, text) in texts.enumerated() {
            for zone in ["UTC", "Europe/Berlin"] {
                let schedule = try CalendarSchedule(text, localTimeZone: zone)
                for round in 0..<4 {
                    // Around a month's end (the year's, first), up to 40 days.
                    let month = round == 0 ? 1 : random.int(1...12)
                    let start = Self.days(2027, month, 1) * 86_400 - random.int(0...(3 * 86_400)) + index
                    let occurrence = Self.instant(start)
                    var end = Self.instant(start + random.int(1...(40 * 86_400)))
                    var naive = Self.walk(schedule, after: occurrence, notAfter: end, limit: 1500)
                    if naive.full, let latest = naive.latest {
                        end = latest
                        naive = (naive.passed, latest, false)
                    }
                    let counted = schedule.occurrences(after: occurrence, notAfter: end)
                    compared += 1
                    if counted?.passed ?? 0 != naive.passed || counted?.latest != naive.latest {
                        failures.append(
                            "\(text) [TZ=\(zone)] after \(start) not after \(end): counted "
                                + "\(String(describing: counted)), walked \(naive.passed) to \(String(describing: naive.latest))"
                        )
                    }
                }
            }
        }
        #expect(compared == texts.count * 8)
        #expect(failures.isEmpty, "\(failures.count) differ:\n\(failures.joined(separator: "\n"))")
    }

    @Test("at the changes and a leap second: from two hours before to one after, five specifications")
    func atTheChanges() throws {
        // 2026 in Berlin: 03-29 01:00Z (spring), 10-25 01:00Z (fall); New York: 03-08 07:00Z, 11-01 06:00Z.
        let cases: [(zone: String, change: Int)] = [
            ("Europe/Berlin", 1_774_746_000), ("Europe/Berlin", 1_792_890_000),
            ("America/New_York", 1_772_953_200), ("America/New_York", 1_793_512_800),
            ("right/Europe/Berlin", 1_792_890_027),
            // The leap second 2016-12-31T23:59:60Z (a right/ zone's clock counts the 26 before it).
            ("right/UTC", 1_483_228_826), ("right/Europe/Berlin", 1_483_228_826),
            // Santiago changes at midnight: 2026-04-05 03:00Z (back), 2026-09-06 04:00Z (forward).
            ("America/Santiago", Self.days(2026, 4, 5) * 86_400 + 10_800),
            ("America/Santiago", Self.days(2026, 9, 6) * 86_400 + 14_400),
        ]
        var failures: [String] = []
        for (zone, change) in cases {
            for text in ["*:*:0/1", "*:0/20:0/30", "*-*-* 01,02:30", "*:*:0/3 UTC", "*-*~03,07 *:*:0/5"] {
                let schedule = try CalendarSchedule(text, localTimeZone: zone)
                for startOffset in stride(from: -7300, through: 3700, by: 2199) {
                    // Up to 2 000 occurrences, from 2 h before the change to 1 h after it.
                    let occurrence = Self.instant(change + startOffset)
                    var end = Self.instant(change + startOffset + 4000)
                    var naive = Self.walk(schedule, after: occurrence, notAfter: end, limit: 2000)
                    if naive.full, let latest = naive.latest {
                        end = latest
                        naive = (naive.passed, latest, false)
                    }
                    let counted = schedule.occurrences(after: occurrence, notAfter: end)
                    if counted?.passed ?? 0 != naive.passed || counted?.latest != naive.latest {
                        failures.append(
                            "\(text) [TZ=\(zone)] from \(change + startOffset): \(String(describing: counted)), walked \(naive)"
                        )
                    }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// Days from the end of the month convert a local time elsewhere in the month, which
    /// may lie across a DST change (and, in Santiago, on the day a skipped midnight moves).
    @Test("days from the end of the month over two years in zones with DST: the naive walk's count")
    func fromTheEndOfTheMonth() throws {
        let start = Self.instant(Self.days(2025, 1, 1) * 86_400)
        let end = Self.instant(Self.days(2027, 1, 1) * 86_400)
        var failures: [String] = []
        // This thread's CPU time, not the wall clock: a thread that loses its core (a loaded
        // machine, a sanitizer) must not change which of the two is cheaper.
        let clock = ThreadCPUClock()
        var walking = Duration.zero
        var counting = Duration.zero
        for zone in ["Europe/Berlin", "America/Santiago", "America/New_York", "Europe/Dublin"] {
            for text in ["*-*~03 *:0/7", "*-*~01..07/2 0/6:00:00", "Sun *-*~07 *:0/20"] {
                let schedule = try CalendarSchedule(text, localTimeZone: zone)
                var naive = (passed: UInt64(0), latest: WallClockInstant?.none, full: false)
                walking += clock.measure { naive = Self.walk(schedule, after: start, notAfter: end, limit: 20_000) }
                var counted: WallClockCatchUp?
                counting += clock.measure { counted = schedule.occurrences(after: start, notAfter: end) }
                if naive.full || counted?.passed ?? 0 != naive.passed || counted?.latest != naive.latest {
                    failures.append("\(text) [TZ=\(zone)]: \(String(describing: counted)), walked \(naive)")
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        // Counted, not walked: the walk takes a step per occurrence, the count a few per change.
        #expect(counting * 10 < walking, "counting \(counting), walking \(walking)")
    }

    @Test("a year of *:*:0/1 in Europe/Berlin: every second but the repeated hour, counted in milliseconds")
    func oneYearEverySecond() throws {
        let schedule = try CalendarSchedule("*:*:0/1 Europe/Berlin")
        let start = Self.days(2026, 1, 1) * 86_400
        let end = Self.days(2027, 1, 1) * 86_400
        // The fall-back on 2026-10-25 at 01:00Z repeats 02:00...02:59 local: the walk fires
        // through the first pass (CEST) and goes on from 03:00 CET, so the hour 01:00Z...01:59:59Z
        // passes without an occurrence.
        let fall = 1_792_890_000
        let near = Self.walk(schedule, after: Self.instant(fall - 2), notAfter: Self.instant(fall + 3602), limit: 10)
        #expect(near.passed == 4)  // fall-1, then fall+3600, +3601, +3602
        #expect(near.latest == Self.instant(fall + 3602))
        let clock = ThreadCPUClock()  // CPU, not wall time: see `fromTheEndOfTheMonth`.
        var counted: WallClockCatchUp?
        let elapsed = clock.measure {
            counted = schedule.occurrences(after: Self.instant(start), notAfter: Self.instant(end))
        }
        #expect(counted?.passed == UInt64(end - start - 3600))
        #expect(counted?.latest == Self.instant(end))
        #expect(elapsed < .milliseconds(500), "\(elapsed)")

        // In UTC every second is one.
        let utc = try CalendarSchedule("*:*:0/1 UTC")
        #expect(utc.occurrences(after: Self.instant(start), notAfter: Self.instant(end))?.passed == UInt64(end - start))
    }

    @Test("1970 to 2026 under *:*:0/1 Europe/Berlin (a board's clock stepped by NTP): one call, exact")
    func boardBootedIn1970() throws {
        let schedule = try CalendarSchedule("*:*:0/1 Europe/Berlin")
        let end = Self.days(2026, 1, 1) * 86_400
        let clock = ThreadCPUClock()  // CPU, not wall time: see `fromTheEndOfTheMonth`.
        var counted: WallClockCatchUp?
        let elapsed = clock.measure {
            counted = schedule.occurrences(after: Self.instant(0), notAfter: Self.instant(end))
        }
        // Berlin has fallen back once a year since 1980: 46 repeated hours without an occurrence.
        #expect(counted?.passed == UInt64(end - 46 * 3600))
        #expect(counted?.latest == Self.instant(end))
        #expect(elapsed < .milliseconds(500), "\(elapsed)")
        print("catch-up 1970-01-01 to 2026-01-01 under *:*:0/1 Europe/Berlin: \(counted?.passed ?? 0) in \(elapsed)")
    }

    @Test("no occurrence, a base past the end, before 1970, past 2199: nil or a count, never a trap")
    func edges() throws {
        let daily = try CalendarSchedule("daily", localTimeZone: "UTC")
        #expect(daily.occurrences(after: Self.instant(100), notAfter: Self.instant(100)) == nil)
        #expect(daily.occurrences(after: Self.instant(100), notAfter: Self.instant(50)) == nil)
        #expect(daily.occurrences(after: Self.instant(100), notAfter: Self.instant(86_399)) == nil)
        #expect(
            daily.occurrences(after: Self.instant(-5), notAfter: Self.instant(86_400))
                == WallClockCatchUp(latest: Self.instant(86_400), passed: 2))
        let last = WallClockInstant(nanosecondsSinceEpoch: .max)
        let count = try #require(daily.occurrences(after: Self.instant(0), notAfter: last))
        // Every day from 1970-01-02 to 2199-12-31 (the last year systemd considers).
        #expect(count.passed == UInt64(Self.days(2200, 1, 1) - 1))
        #expect(count.latest == Self.instant((Self.days(2200, 1, 1) - 1) * 86_400))
        #expect(
            daily.occurrences(after: WallClockInstant(nanosecondsSinceEpoch: .min), notAfter: last)?.passed
                == UInt64(Self.days(2200, 1, 1)))
        let never = try CalendarSchedule("2025-02-28 12:00 UTC")
        #expect(never.occurrences(after: Self.instant(1_800_000_000), notAfter: last) == nil)
    }
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): what a computation costs, whatever
/// the scheduler does meanwhile. Synchronous work only (an `await` may resume on another thread).
private struct ThreadCPUClock {
    func measure(_ body: () throws -> Void) rethrows -> Duration {
        let start = Self.now()
        try body()
        return Self.now() - start
    }

    private static func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
