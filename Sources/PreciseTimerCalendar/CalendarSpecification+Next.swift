/// systemd's `find_next` and `calendar_spec_next_usec` (systemd 252.38, Debian 12's, which
/// carries the fix for zones with negative DST), step for step: the same walk from the largest
/// field to the smallest, the same `mktime` normalizations between the steps, the same safety
/// valve, so that every answer is `systemd-analyze calendar`'s.
extension CalendarSpecification {
    /// systemd's `USEC_TIMESTAMP_FORMATTABLE_MAX`: 9999-12-30 23:59:59 UTC.
    static let latestBase = 253_402_214_399_000_000
    /// systemd's `MAX_CALENDAR_ITERATIONS`: a walk that has not settled by then gives up.
    static let maximumIterations = 1000

    /// The first occurrence strictly after `microseconds` (since the epoch), in microseconds,
    /// local fields read in `zone` (for a specification in UTC, UTC as glibc computes it in the
    /// process: with the leap seconds of a `right/` local zone); nil: none.
    func next(afterMicroseconds microseconds: Int, zone: TimeZoneRules) -> Int? {
        guard microseconds <= Self.latestBase else { return nil }
        let (seconds, fraction) = CivilTime.floorDivide(microseconds + 1, Self.microsecondsPerSecond)
        var converter = LocalTimeConverter(zone: zone)
        var time = converter.brokenDown(seconds)
        var microsecond = fraction
        guard self.findNext(&time, &microsecond, &converter), let instant = converter.makeTime(&time), instant >= 0
        else { return nil }
        return instant * Self.microsecondsPerSecond + microsecond
    }

    private func findNext(
        _ time: inout BrokenDownTime, _ microsecondOut: inout Int, _ converter: inout LocalTimeConverter
    ) -> Bool {
        let start = time
        let startMicrosecond = microsecondOut
        var c = time
        var microsecond = microsecondOut
        // Set once an answer came out before the start: from then on each pass keeps the
        // daylight flag `mktime` found instead of the specification's (systemd 252.38's fix for
        // zones whose winter time is the "daylight" one, Europe/Dublin, where `mktime` resolves
        // a time in the spring-forward gap backwards; it mends Lord Howe's 30-minute gap too).
        var keepDaylightFlag = false
        func resetBelowMonth() { c.day = 1; c.hour = 0; c.minute = 0; c.second = 0; microsecond = 0 }
        func resetBelowDay() { c.hour = 0; c.minute = 0; c.second = 0; microsecond = 0 }

        for _ in 0..<Self.maximumIterations {
            // In UTC, fields in range normalize to themselves: skip the conversion.
            if !(converter.zone.isUTC && c.isInRange) { _ = converter.makeTime(&c) }
            if !keepDaylightFlag { c.isDST = self.dst }

            var year = c.year
            var r = self.matchingComponent(self.year, isDay: false, time: c, value: &year, converter: &converter)
            c.year = year
            if r > 0 {
                c.month = 0
                resetBelowMonth()
            }
            if r < 0 || Self.withinBounds(&c, &converter) <= 0 { return false }

            var month = c.month + 1
            r = self.matchingComponent(self.month, isDay: false, time: c, value: &month, converter: &converter)
            c.month = month - 1
            if r > 0 { resetBelowMonth() }
            if r >= 0 { r = Self.withinBounds(&c, &converter) }
            if r < 0 {
                c.year += 1
                c.month = 0
                resetBelowMonth()
                continue
            }
            if r == 0 { continue }

            var day = c.day
            r = self.matchingComponent(self.day, isDay: true, time: c, value: &day, converter: &converter)
            c.day = day
            if r > 0 { resetBelowDay() }
            if r >= 0 { r = Self.withinBounds(&c, &converter) }
            if r < 0 {
                c.month += 1
                resetBelowMonth()
                continue
            }
            if r == 0 { continue }

            if !self.matchesWeekday(c, &converter) {
                c.day += 1
                resetBelowDay()
                continue
            }

            var hour = c.hour
            r = self.matchingComponent(self.hour, isDay: false, time: c, value: &hour, converter: &converter)
            c.hour = hour
            if r > 0 { c.minute = 0; c.second = 0; microsecond = 0 }
            if r >= 0 { r = Self.withinBounds(&c, &converter) }
            if r < 0 {
                c.day += 1
                resetBelowDay()
                continue
            }
            // The hour just set may not exist (a DST change): start again from the normalized time.
            if r == 0 { continue }

            var minute = c.minute
            r = self.matchingComponent(self.minute, isDay: false, time: c, value: &minute, converter: &converter)
            c.minute = minute
            if r > 0 { c.second = 0; microsecond = 0 }
            if r >= 0 { r = Self.withinBounds(&c, &converter) }
            if r < 0 {
                c.hour += 1
                c.minute = 0; c.second = 0; microsecond = 0
                continue
            }
            if r == 0 { continue }

            var second = c.second * Self.microsecondsPerSecond + microsecond
            r = self.matchingComponent(self.microsecond, isDay: false, time: c, value: &second, converter: &converter)
            microsecond = second % Self.microsecondsPerSecond
            c.second = second / Self.microsecondsPerSecond
            if r >= 0 { r = Self.withinBounds(&c, &converter) }
            if r < 0 {
                c.minute += 1
                c.second = 0; microsecond = 0
                continue
            }
            if r == 0 { continue }

            // A normalization went backwards (a gap resolved to the earlier side): never answer
            // before the start; try the next hour, keeping the flag `mktime` found.
            if (c.year, c.month, c.day, c.hour, c.minute, c.second)
                < (start.year, start.month, start.day, start.hour, start.minute, start.second)
                || ((c.year, c.month, c.day, c.hour, c.minute, c.second)
                    == (start.year, start.month, start.day, start.hour, start.minute, start.second)
                    && microsecond < startMicrosecond)
            {
                c.hour += 1
                keepDaylightFlag = true
                continue
            }
            time = c
            microsecondOut = microsecond
            return true
        }
        return false
    }

    /// systemd's `find_matching_component`: the earliest value of `chain` at or after `value`.
    /// -1: none; 0: `value` already matches; 1: `value` moved forward.
    func matchingComponent(
        _ chain: [CalendarComponent]?, isDay: Bool, time: BrokenDownTime, value: inout Int,
        converter: inout LocalTimeConverter
    ) -> Int {
        guard let chain else { return 0 }
        let fromEndOfMonth = self.endOfMonth && isDay
        var best = -1
        var found = false
        for component in chain {
            var start = component.start
            var stop = component.stop
            if fromEndOfMonth {
                start = Self.dayFromEndOfMonth(time, component.start, &converter)
                stop = Self.dayFromEndOfMonth(time, component.stop, &converter)
                if stop > 0 { swap(&start, &stop) }
            }
            if start >= value {
                if !found || start < best {
                    best = start
                    found = true
                }
            } else if component.repetition > 0 {
                let steps = (value - start + component.repetition - 1) / component.repetition
                let candidate = start + component.repetition * steps
                if (!found || candidate < best) && (stop < 0 || candidate <= stop) {
                    best = candidate
                    found = true
                }
            }
        }
        guard found else { return -1 }
        defer { value = best }
        return value != best ? 1 : 0
    }

    /// systemd's `find_end_of_month`: the day of `time`'s month that is `day` days before the
    /// next month's first (`~1` is the last day); -1 when that is in another month.
    private static func dayFromEndOfMonth(
        _ time: BrokenDownTime, _ day: Int, _ converter: inout LocalTimeConverter
    ) -> Int {
        var probe = time
        probe.month += 1
        probe.day = 1 - day
        guard converter.makeTime(&probe) != nil, probe.month == time.month else { return -1 }
        return probe.day
    }

    /// systemd's `tm_within_bounds`: -1 when the fields are past the last year, fail to convert,
    /// or normalize backwards; 0 when they normalized forwards (`time` becomes the normalized
    /// fields, the smaller ones reset); 1 when they name an existing local time as they are.
    private static func withinBounds(_ time: inout BrokenDownTime, _ converter: inout LocalTimeConverter) -> Int {
        guard time.year <= Self.maximumYear else { return -1 }
        if converter.zone.isUTC && time.isInRange { return 1 }
        var normalized = time
        guard converter.makeTime(&normalized) != nil else { return -1 }
        let order: Int
        if normalized.year != time.year {
            order = normalized.year < time.year ? -1 : 1
            normalized.month = 0
        } else if normalized.month != time.month {
            order = normalized.month < time.month ? -1 : 1
            normalized.day = 1
        } else if normalized.day != time.day {
            order = normalized.day < time.day ? -1 : 1
            normalized.hour = 0
        } else if normalized.hour != time.hour {
            order = normalized.hour < time.hour ? -1 : 1
            normalized.minute = 0
        } else if normalized.minute != time.minute {
            order = normalized.minute < time.minute ? -1 : 1
            normalized.second = 0
        } else {
            order = normalized.second == time.second ? 0 : (normalized.second < time.second ? -1 : 1)
        }
        if order < 0 { return -1 }
        if order > 0 {
            time = normalized
            return 0
        }
        return 1
    }

    private func matchesWeekday(_ time: BrokenDownTime, _ converter: inout LocalTimeConverter) -> Bool {
        guard self.weekdays >= 0 && self.weekdays < Self.weekdayBitsAll else { return true }
        var probe = time
        guard converter.makeTime(&probe) != nil else { return false }
        let day = probe.weekday == 0 ? 6 : probe.weekday - 1  // Monday is bit 0
        return self.weekdays & (1 << day) != 0
    }
}
