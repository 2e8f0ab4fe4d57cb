import PreciseTimerCalendar
import PreciseTimerCore
import Testing

/// What the oracle table does not show: the error's content, equality, bad input that must
/// neither trap nor hang, and the schedule as a `WallClockSchedule`.
@Suite("CalendarSchedule")
struct CalendarScheduleTests {
    private func instant(_ seconds: Int64) -> WallClockInstant {
        WallClockInstant(nanosecondsSinceEpoch: seconds * 1_000_000_000)
    }

    @Test(
        "refusals are .invalidSchedule with the specification as given and what is wrong",
        arguments: [
            ("*:*:0/0", "repetition of 0"), ("Mon..Xyz 09:00", "weekday"), ("*-*-* 25:00", "hour out of range"),
            ("*-13-01", "month out of range"), ("*-*-* 09:00 Not/AZone", "unknown time zone"),
            ("", "empty"), ("every day", "expected a number at offset 0"), ("2200-01-01", "year out of range"),
            ("*-*-* 09:00\u{0}", "NUL"), ("Fri..Mon 09:00", "backwards"),
        ])
    func refusals(specification: String, reason: String) {
        #expect {
            try CalendarSchedule(specification)
        } throws: { error in
            guard let error = error as? PreciseTimerError else { return false }
            return error.code == .invalidSchedule && error.value == specification
                && (error.detail ?? "").contains(reason)
        }
    }

    @Test("huge and absurd input is refused or parsed in linear time, never a trap or a hang")
    func hugeInput() throws {
        let clock = ContinuousClock()
        let start = clock.now
        // 100 000 values in one list: over systemd's limit of 241.
        let list = (0..<100_000).map { String($0 % 60) }.joined(separator: ",")
        #expect(throws: PreciseTimerError.self) { try CalendarSchedule("*:\(list)") }
        // 241 values: at the limit, accepted (duplicates merged).
        let atLimit = try CalendarSchedule("*:" + (0..<241).map { String($0 % 60) }.joined(separator: ","))
        #expect(atLimit.description.hasPrefix("*-*-* *:00,01,02"))
        // A megabyte of digits, of spaces, of dots: refused, as systemd refuses them.
        for text in [
            String(repeating: "9", count: 1 << 20), String(repeating: " ", count: 1 << 20),
            String(repeating: ".", count: 1 << 20),
        ] {
            #expect(throws: PreciseTimerError.self) { try CalendarSchedule(text) }
        }
        // A megabyte of weekday names, of decimals: accepted, as systemd accepts them (a
        // repeated weekday is one weekday; decimals past the sixth round at the seventh).
        #expect(
            try CalendarSchedule(String(repeating: "Mon,", count: 1 << 18) + " 09:00").description
                == "Mon *-*-* 09:00:00")
        #expect(
            try CalendarSchedule("*-*-* 12:00:00." + String(repeating: "4", count: 1 << 20)).description
                == "*-*-* 12:00:00.444444")
        #expect(clock.now - start < .seconds(60))
    }

    @Test("a schedule with no occurrence left answers nil, and one past 2199 too")
    func noOccurrence() throws {
        #expect(try CalendarSchedule("2001-01-01").next(after: self.instant(1_767_222_000)) == nil)
        #expect(try CalendarSchedule("*-02-30").next(after: self.instant(1_767_222_000)) == nil)
        #expect(try CalendarSchedule("daily").next(after: self.instant(7_258_118_400)) == nil)  // 2200-01-01
        #expect(try CalendarSchedule("daily").next(after: WallClockInstant(nanosecondsSinceEpoch: .max)) == nil)
    }

    @Test("strictly after, to the nanosecond; before 1970 counts from the epoch")
    func strictlyAfter() throws {
        let daily = try CalendarSchedule("daily UTC")
        let midnight = self.instant(1_767_225_600)  // 2026-01-01T00:00:00Z
        #expect(daily.next(after: midnight.advanced(by: .nanoseconds(-1))) == midnight)
        #expect(daily.next(after: midnight) == midnight.advanced(by: .seconds(86_400)))
        #expect(daily.next(after: WallClockInstant(nanosecondsSinceEpoch: -5)) == self.instant(0))
        let fractional = try CalendarSchedule("*:*:0.25 UTC")
        #expect(fractional.next(after: midnight) == midnight.advanced(by: .milliseconds(250)))
    }

    @Test("equal when the normalized forms and zones are: Mon..Fri 9:00 is Mon-Fri 09:00:00")
    func equality() throws {
        let a = try CalendarSchedule("Mon..Fri 9:00 Europe/Berlin")
        let b = try CalendarSchedule("mon-fri *-*-* 09:00:00 Europe/Berlin")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a.specification == "Mon..Fri 9:00 Europe/Berlin")
        #expect(a.description == "Mon..Fri *-*-* 09:00:00 Europe/Berlin")
        #expect(a.timeZoneName == "Europe/Berlin")
        #expect(try CalendarSchedule("Mon..Fri 9:00 UTC") != a)
        #expect(try CalendarSchedule("Mon..Fri 9:00 UTC").timeZoneName == "UTC")
        #expect(Set([a, b]).count == 1)
    }

    @Test("a spring-forward time is skipped, a fall-back time fires once (Europe/Berlin, 2026)")
    func daylightSaving() throws {
        let schedule = try CalendarSchedule("*-*-* 02:30 Europe/Berlin")
        // 2026-03-28T12:00Z: the next 02:30 local is on the 30th (the 29th has none).
        var next = try #require(schedule.next(after: self.instant(1_774_699_200)))
        #expect(next == self.instant(1_774_830_600))  // 2026-03-30T00:30Z = 02:30 CEST
        // 2026-10-24T12:00Z: 02:30 on the 25th happens twice; it fires at the first (00:30Z).
        next = try #require(schedule.next(after: self.instant(1_792_843_200)))
        #expect(next == self.instant(1_792_888_200))  // 2026-10-25T00:30Z = 02:30 CEST
        next = try #require(schedule.next(after: next))
        #expect(next == self.instant(1_792_978_200))  // 2026-10-26T01:30Z = 02:30 CET, not 01:30Z the 25th
    }
}
