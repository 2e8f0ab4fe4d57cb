import Foundation
import PreciseTimer
import PreciseTimerCalendar

extension BenchmarkRun {
    /// `CalendarSchedule.next(after:)` per call, walking each schedule's occurrences from
    /// 2026-01-01 (so DST changes are crossed), beside Foundation's `Calendar.nextDate(after:
    /// matching:)` for the same daily schedule.
    mutating func measureCalendarCost() {
        let calls = self.plan.quick ? 20_000 : 200_000
        Self.log("wallclock: CalendarSchedule.next(after:), \(calls) calls per schedule")
        self.report.section(
            "CalendarSchedule.next(after:), \(calls) calls (ns per call)", values: ["ns/call"], ratios: [])
        let start = WallClockInstant(nanosecondsSinceEpoch: 1_767_225_600_000_000_000)
        let rows: [(String, String, Double?)] = [
            ("daily 09:00, UTC", "*-*-* 09:00 UTC", 500),
            ("every 15 minutes, UTC", "*:0/15 UTC", 500),
            ("Mon..Fri 09:00, UTC", "Mon..Fri 09:00 UTC", 500),
            ("daily 09:00, Europe/Berlin", "*-*-* 09:00 Europe/Berlin", 2_000),
            ("every 15 minutes, Europe/Berlin", "*:0/15 Europe/Berlin", 2_000),
            ("Mon..Fri 09:00, Europe/Berlin", "Mon..Fri 09:00 Europe/Berlin", 2_000),
            ("02:30 daily, Europe/Berlin (DST gaps)", "*-*-* 02:30 Europe/Berlin", 2_000),
            ("last day of the month 23:00, Australia/Lord_Howe", "*-*~01 23:00 Australia/Lord_Howe", 2_000),
        ]
        for (label, specification, target) in rows {
            guard let schedule = try? CalendarSchedule(specification) else {
                self.report.skipped(label, reason: "refused")
                continue
            }
            var instant = start
            var checksum: Int64 = 0
            let began = Measure.now()
            for _ in 0..<calls {
                // A schedule that runs out (the last day of 2199) starts over.
                let next = schedule.next(after: instant) ?? start
                checksum &+= next.nanosecondsSinceEpoch
                instant = next
            }
            let perCall = Double(Measure.now() - began) / Double(calls)
            precondition(checksum != 0)
            var note = ""
            if let target {
                note = self.report.check(
                    "≤ \(Int(target)) ns", perCall <= target,
                    "CalendarSchedule.next(after:) \(label) ≤ \(Int(target)) ns: \(Int(perCall)) ns")
            }
            self.report.row(label, values: [String(Int(perCall))], note: note)
            self.figures["calendar.\(specification)"] = perCall
        }
        // Foundation's calendar for the same daily 09:00 in Berlin (a peer: what a Swift user reaches for).
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Europe/Berlin")!
        var date = Date(timeIntervalSince1970: 1_767_225_600)
        let components = DateComponents(hour: 9, minute: 0, second: 0)
        let foundationCalls = calls / 10
        let began = Measure.now()
        for _ in 0..<foundationCalls {
            guard let next = calendar.nextDate(after: date, matching: components, matchingPolicy: .nextTime) else {
                break
            }
            date = next
        }
        let perCall = Double(Measure.now() - began) / Double(foundationCalls)
        self.report.row("Foundation Calendar.nextDate, daily 09:00, Europe/Berlin", values: [String(Int(perCall))])
        self.figures["calendar.foundation.daily"] = perCall
    }
}
