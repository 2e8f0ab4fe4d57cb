/// Counting a specification's occurrences without walking them: what
/// ``CalendarSchedule/occurrences(after:notAfter:)`` adds up.
///
/// The walk (``CalendarSpecification/next(afterMicroseconds:zone:)``, systemd's `find_next`)
/// is plain calendar arithmetic wherever every `mktime` it makes lands in one stretch of
/// constant offset: it then answers the first local time at or after the base whose fields all
/// match. ``CalendarCounter`` counts those local times per civil day (matching days ×
/// matching times of day) and ``RegularStretch`` finds the bases for which the walk is that
/// arithmetic; everything else (a DST change, a leap second, a long empty stretch) is left to
/// `next(afterMicroseconds:)` itself, one step at a time.
extension CalendarSpecification {
    /// Whether `value` is one of `chain`'s values (`find_matching_component` leaves it as it
    /// is); days (`isDay`) in the month `month` (1...12) of `year`.
    func matches(_ chain: [CalendarComponent]?, isDay: Bool, value: Int, year: Int = 2001, month: Int = 1) -> Bool {
        self.firstValue(chain, isDay: isDay, from: value, year: year, month: month) == value
    }

    /// The first of `chain`'s values at or after `value` (perhaps past the field's range), as
    /// `find_matching_component` finds it; nil: none.
    func firstValue(
        _ chain: [CalendarComponent]?, isDay: Bool, from value: Int, year: Int = 2001, month: Int = 1
    )
        -> Int?
    {
        var converter = LocalTimeConverter(zone: .utc)
        let time = BrokenDownTime(
            localSeconds: CivilTime.days(year: year, month: month, day: 1) * CivilTime.secondsPerDay, isDST: false)
        var moved = value
        return self.matchingComponent(chain, isDay: isDay, time: time, value: &moved, converter: &converter) >= 0
            ? moved : nil
    }
}

/// The microseconds of a minute (0 ..< 60 000 000) a specification's seconds field matches.
struct MicrosecondSet {
    static let perMinute = 60 * CalendarSpecification.microsecondsPerSecond

    private enum Storage {
        case values([Int])
        case progression(start: Int, step: Int, count: Int)
    }

    private let storage: Storage
    let count: Int

    /// nil when the set is too large to list and is not one progression, or when the walk's
    /// carry into the next minute skips some of it (see ``CalendarCounter/init(_:)``).
    init?(_ chain: [CalendarComponent]?) {
        let end = Self.perMinute
        guard let chain else {
            self.storage = .progression(start: 0, step: 1, count: end)
            self.count = end
            return
        }
        var progressions: [(start: Int, step: Int, count: Int)] = []
        var total = 0
        for component in chain {
            guard component.start >= 0, component.start < end else { continue }
            if component.repetition > 0 {
                let last = component.stop >= 0 ? min(component.stop, end - 1) : end - 1
                guard last >= component.start else {
                    progressions.append((component.start, 1, 1))
                    total += 1
                    continue
                }
                let count = (last - component.start) / component.repetition + 1
                progressions.append((component.start, component.repetition, count))
                total += count
            } else {
                progressions.append((component.start, 1, 1))
                total += 1
            }
        }
        if progressions.count == 1 {
            self.storage = .progression(
                start: progressions[0].start, step: progressions[0].step, count: progressions[0].count)
            self.count = progressions[0].count
        } else if total <= 200_000 {
            var values: [Int] = []
            values.reserveCapacity(total)
            for progression in progressions {
                for index in 0..<progression.count { values.append(progression.start + index * progression.step) }
            }
            values.sort()
            var unique: [Int] = []
            unique.reserveCapacity(values.count)
            for value in values where unique.last != value { unique.append(value) }
            self.storage = .values(unique)
            self.count = unique.count
        } else {
            return nil
        }
    }

    var minimum: Int? {
        switch self.storage {
        case .values(let values): return values.first
        case .progression(let start, _, let count): return count > 0 ? start : nil
        }
    }

    /// How many values are at most `value`.
    func count(through value: Int) -> Int {
        switch self.storage {
        case .values(let values):
            var low = 0
            var high = values.count
            while low < high {
                let middle = (low + high) / 2
                if values[middle] <= value { low = middle + 1 } else { high = middle }
            }
            return low
        case .progression(let start, let step, let count):
            guard value >= start else { return 0 }
            return min(count, (value - start) / step + 1)
        }
    }

    /// The largest value at most `value`.
    func last(through value: Int) -> Int? {
        switch self.storage {
        case .values(let values):
            let count = self.count(through: value)
            return count > 0 ? values[count - 1] : nil
        case .progression(let start, let step, _):
            let count = self.count(through: value)
            return count > 0 ? start + (count - 1) * step : nil
        }
    }
}

/// A specification's matching local times as calendar arithmetic: which days match (year,
/// month, day of the month or from its end, weekday), which times of day (hour × minute ×
/// microsecond of the minute), and how many lie in a range of local time.
struct CalendarCounter {
    static let microsecondsPerDay = CivilTime.secondsPerDay * CalendarSpecification.microsecondsPerSecond
    static let microsecondsPerHour = 3600 * CalendarSpecification.microsecondsPerSecond
    static let microsecondsPerMinute = 60 * CalendarSpecification.microsecondsPerSecond
    /// Two consecutive matching days further apart than this end a counted stretch: the walk
    /// crosses such a gap itself (systemd's search gives up after 1 000 steps, which a gap of
    /// years can take; one of 100 days takes at most a few hundred).
    static let longestCountedGap = 100

    private let specification: CalendarSpecification
    private let hours: UInt32
    private let minutes: UInt64
    private let seconds: MicrosecondSet
    private let months: UInt16
    /// Days of the month that match, by the month's length (index 0...3 for 28...31 days).
    private let daysByLength: [UInt64]
    /// Days of the month whose weekday matches, by the weekday of the 1st (0 = Monday).
    private let daysByFirstWeekday: [UInt64]
    private let perMinute: Int
    private let perHour: Int
    /// Matching times in a day (at least one when the specification can fire at all).
    let perDay: Int
    /// The last matching time of day (valid when ``perDay`` > 0); the walk never skips it.
    private let lastTimeOfDay: Int

    // systemd's search carries a value past the end of its field into the next field
    // (`tm_within_bounds`) and then resets only the field just below the largest one that
    // changed: what was carried into the others stays, and the matches below it are skipped.
    // Under `*:0/7`, from 23:56 it tries 23:63, goes on from 00:03 of the next day and never
    // fires at 00:00 after a day that fired; under `*:*:0/45`, from 12:59:45 it tries 12:59:90
    // and goes on from 13:00:30, skipping 13:00:00; under `*-*-05,16,19/10`, from December 29th
    // it tries the 39th and goes on from January 8th, skipping the 5th. The walk passes the last match of every
    // field (what is carried is less than the repetition), so each skip recurs at every
    // boundary of its kind and is counted per boundary:
    /// Microseconds skipped at the start of a minute entered from the minute before (in the
    /// same hour, both matching): the carried seconds are reset, the fraction stays.
    private let minuteSkip: Int
    /// Minutes `m` (1...59) where that happens: `m` and `m - 1` match.
    private let skipMinutes: UInt64
    /// Matches skipped in minute 0 of an hour entered from the hour before (both matching,
    /// minute 59 and minute 0 matching): all the carried seconds stay.
    private let hourSkip: Int
    /// Hours `h` (1...23) where that happens.
    private let skipHours: UInt32
    /// Where the walk goes on in a matching day entered from the matching day before
    /// (microseconds since midnight): what its last hour carries (seconds carried from 23:59,
    /// minutes from hour 23), or, from a day whose last hour is before 23, the hours carried
    /// into the 1st of a month.
    private let entryAfterCarry: Int
    /// Whether ``entryAfterCarry`` applies after every matching day, or only across a month.
    private let carriesEveryDay: Bool
    /// How far past the start of the next field (microseconds of local time) a value carried
    /// into it can reach: `tm_within_bounds` converts the carried time there before it resets
    /// the fields below, and its daylight flag stays for the next conversion. A counted run
    /// keeps that far inside its stretch.
    let carryReach: Int
    /// The day of January the walk goes on from after a matching December (1: the 1st).
    private let januaryEntry: Int
    /// Occurrences in a matching day entered from a reset (at its first match), or from a carry.
    private var perDayEntered = 0
    private var perDayCarried = 0

    /// nil for a seconds field too large to list that is not one progression.
    init?(_ specification: CalendarSpecification) {
        guard let seconds = MicrosecondSet(specification.microsecond) else { return nil }
        self.specification = specification
        self.seconds = seconds
        var hours: UInt32 = 0
        for hour in 0..<24 where specification.matches(specification.hour, isDay: false, value: hour) {
            hours |= 1 << hour
        }
        var minutes: UInt64 = 0
        for minute in 0..<60 where specification.matches(specification.minute, isDay: false, value: minute) {
            minutes |= 1 << minute
        }
        var months: UInt16 = 0
        for month in 1...12 where specification.matches(specification.month, isDay: false, value: month) {
            months |= 1 << month
        }
        self.hours = hours
        self.minutes = minutes
        self.months = months
        // Months of 28, 29, 30 and 31 days: February 2001, February 2004, April and January 2001.
        self.daysByLength = [(2001, 2), (2004, 2), (2001, 4), (2001, 1)].map { year, month in
            var mask: UInt64 = 0
            for day in 1...CivilTime.daysInMonth(year: year, month: month)
            where specification.matches(specification.day, isDay: true, value: day, year: year, month: month) {
                mask |= 1 << day
            }
            return mask
        }
        let weekdays = specification.weekdays
        self.daysByFirstWeekday = (0..<7).map { first in
            var mask: UInt64 = 0
            for day in 1...31 {
                let weekday = (first + day - 1) % 7
                if weekdays < 0 || weekdays >= CalendarSpecification.weekdayBitsAll || weekdays & (1 << weekday) != 0 {
                    mask |= 1 << day
                }
            }
            return mask
        }
        self.perMinute = seconds.count
        self.perHour = minutes.nonzeroBitCount * self.perMinute
        let perDay = hours.nonzeroBitCount * self.perHour
        self.perDay = perDay
        var lastTimeOfDay = 0
        if perDay > 0, let last = seconds.last(through: MicrosecondSet.perMinute - 1) {
            lastTimeOfDay =
                (31 - hours.leadingZeroBitCount) * Self.microsecondsPerHour
                + (63 - minutes.leadingZeroBitCount) * Self.microsecondsPerMinute + last
        }
        self.lastTimeOfDay = lastTimeOfDay

        let perSecond = CalendarSpecification.microsecondsPerSecond
        let carriedSeconds = Self.firstPastEnd(specification.microsecond, end: MicrosecondSet.perMinute)
        let carriedMinutes = Self.firstPastEnd(specification.minute, end: 60)
        let carriedHours = Self.firstPastEnd(specification.hour, end: 24)
        var minuteSkip = 0
        var hourSkip = 0
        if let carried = carriedSeconds {
            minuteSkip = carried % perSecond
            if minutes & (1 << 59) != 0 && minutes & 1 != 0 { hourSkip = carried }
        }
        self.minuteSkip = minuteSkip
        self.hourSkip = hourSkip
        self.skipMinutes = minuteSkip > 0 ? minutes & (minutes << 1) & ~1 & ((1 << 60) - 1) : 0
        self.skipHours = hourSkip > 0 ? hours & (hours << 1) & ~1 & ((1 << 24) - 1) : 0
        if hours & (1 << 23) != 0 {
            self.carriesEveryDay = true
            if minutes & (1 << 59) != 0 {
                self.entryAfterCarry = carriedSeconds ?? 0
            } else {
                self.entryAfterCarry = (carriedMinutes ?? 0) * Self.microsecondsPerMinute
            }
        } else {
            self.carriesEveryDay = false
            self.entryAfterCarry = (carriedHours ?? 0) * Self.microsecondsPerHour
        }
        var reach = max(
            carriedSeconds ?? 0, (carriedMinutes ?? 0) * Self.microsecondsPerMinute,
            (carriedHours ?? 0) * Self.microsecondsPerHour)
        for (year, month) in [(2001, 2), (2004, 2), (2001, 4), (2001, 1)] {
            let length = CivilTime.daysInMonth(year: year, month: month)
            for day in 1...length {
                if let value = specification.firstValue(
                    specification.day, isDay: true, from: day, year: year, month: month), value > length
                {
                    reach = max(reach, (value - length - 1) * Self.microsecondsPerDay)
                }
            }
        }
        for month in 1...12 {
            if let value = specification.firstValue(specification.month, isDay: false, from: month), value > 12 {
                reach = max(reach, (value - 12) * 31 * Self.microsecondsPerDay)
            }
        }
        self.carryReach = reach
        // A day carried past December's end changes the year, and only the month is reset:
        // the walk goes on from that day of January.
        var januaryEntry = 1
        let december = self.daysByLength[3]
        if december != 0 && december & (1 << 31) == 0 {
            let lastDay = 63 - december.leadingZeroBitCount
            if let value = specification.firstValue(
                specification.day, isDay: true, from: lastDay + 1, year: 2001, month: 12), value > 31
            {
                januaryEntry = value - 31
            }
        }
        self.januaryEntry = januaryEntry
        if perDay > 0 {
            self.perDayEntered = self.walkCount(from: 0, through: Self.microsecondsPerDay - 1)
            self.perDayCarried = self.walkCount(from: self.entryAfterCarry, through: Self.microsecondsPerDay - 1)
        }
    }

    /// How far past `end` the first value past it of a repetition without end lies (the
    /// smallest over the chain): what `find_matching_component` answers once the field's
    /// values are exhausted. nil: no repetition without end.
    private static func firstPastEnd(_ chain: [CalendarComponent]?, end: Int) -> Int? {
        var first: Int?
        for component in chain ?? [] where component.stop < 0 && component.repetition > 0 && component.start < end {
            let steps = (end - component.start + component.repetition - 1) / component.repetition
            let past = component.start + steps * component.repetition - end
            first = min(first ?? past, past)
        }
        return first
    }

    /// How many matching times of day are at most `time` (microseconds since midnight).
    private func count(through time: Int) -> Int {
        let hour = time / Self.microsecondsPerHour
        let minute = time / Self.microsecondsPerMinute % 60
        var count = (self.hours & ((1 << hour) - 1)).nonzeroBitCount * self.perHour
        guard self.hours & (1 << hour) != 0 else { return count }
        count += (self.minutes & ((1 << minute) - 1)).nonzeroBitCount * self.perMinute
        guard self.minutes & (1 << minute) != 0 else { return count }
        return count + self.seconds.count(through: time % Self.microsecondsPerMinute)
    }

    /// The last matching time of day at most `time`.
    private func last(through time: Int) -> Int? {
        let hour = time / Self.microsecondsPerHour
        let minute = time / Self.microsecondsPerMinute % 60
        let lastSecond = self.seconds.last(through: MicrosecondSet.perMinute - 1) ?? 0
        if self.hours & (1 << hour) != 0 {
            if self.minutes & (1 << minute) != 0,
                let second = self.seconds.last(through: time % Self.microsecondsPerMinute)
            {
                return hour * Self.microsecondsPerHour + minute * Self.microsecondsPerMinute + second
            }
            let earlier = self.minutes & ((1 << minute) - 1)
            if earlier != 0 {
                return hour * Self.microsecondsPerHour + (63 - earlier.leadingZeroBitCount)
                    * Self.microsecondsPerMinute + lastSecond
            }
        }
        let earlier = self.hours & ((1 << hour) - 1)
        guard earlier != 0 else { return nil }
        return (31 - earlier.leadingZeroBitCount) * Self.microsecondsPerHour
            + (63 - self.minutes.leadingZeroBitCount) * Self.microsecondsPerMinute + lastSecond
    }

    /// Matches the walk skips in minute `minute` of hour `hour` when it enters that minute from
    /// the one before, among the microseconds at most `second`.
    private func skipped(hour: Int, minute: Int, through second: Int) -> Int {
        var count = 0
        if self.hours & (1 << hour) != 0 && self.skipMinutes & (1 << minute) != 0 {
            count += self.seconds.count(through: min(second, self.minuteSkip - 1))
        }
        if minute == 0 && self.skipHours & (1 << hour) != 0 {
            count += self.seconds.count(through: min(second, self.hourSkip - 1))
        }
        return count
    }

    /// Matches skipped in the minutes of a day before `minute` of `hour`.
    private func skipped(before hour: Int, _ minute: Int) -> Int {
        let lowHours = (1 << hour) - 1
        let minuteCount = self.skipMinutes.nonzeroBitCount > 0 ? self.seconds.count(through: self.minuteSkip - 1) : 0
        let hourCount = self.skipHours != 0 ? self.seconds.count(through: self.hourSkip - 1) : 0
        var count = (self.hours & UInt32(lowHours)).nonzeroBitCount * self.skipMinutes.nonzeroBitCount * minuteCount
        count += (self.skipHours & UInt32(lowHours)).nonzeroBitCount * hourCount
        if self.hours & (1 << hour) != 0 {
            count += (self.skipMinutes & ((1 << minute) - 1)).nonzeroBitCount * minuteCount
        }
        if minute > 0 && self.skipHours & (1 << hour) != 0 { count += hourCount }
        return count
    }

    /// Matches the walk skips in the minutes after the one of `entry` up to `time` (both
    /// microseconds since midnight): it goes through every minute boundary after its entry.
    private func skipped(after entry: Int, through time: Int) -> Int {
        let entryMinute = entry / Self.microsecondsPerMinute
        let minute = time / Self.microsecondsPerMinute
        guard minute > entryMinute else { return 0 }
        let through =
            self.skipped(before: minute / 60, minute % 60)
            + self.skipped(hour: minute / 60, minute: minute % 60, through: time % Self.microsecondsPerMinute)
        let before =
            self.skipped(before: entryMinute / 60, entryMinute % 60)
            + self.skipped(hour: entryMinute / 60, minute: entryMinute % 60, through: MicrosecondSet.perMinute - 1)
        return through - before
    }

    /// The occurrences of a matching day the walk finds from a search that starts at `entry`
    /// (microseconds since midnight, itself a candidate) through `time`.
    private func walkCount(from entry: Int, through time: Int) -> Int {
        guard time >= entry else { return 0 }
        let before = entry > 0 ? self.count(through: entry - 1) : 0
        return self.count(through: time) - before - self.skipped(after: entry, through: time)
    }

    /// The last of them.
    private func walkLast(from entry: Int, through time: Int) -> Int? {
        guard time >= entry, var last = self.last(through: time), last >= entry else { return nil }
        let minute = last / Self.microsecondsPerMinute
        if minute > entry / Self.microsecondsPerMinute
            && self.skipped(hour: minute / 60, minute: minute % 60, through: last % Self.microsecondsPerMinute)
                > self.skipped(
                    hour: minute / 60, minute: minute % 60, through: last % Self.microsecondsPerMinute - 1)
        {
            // Skipped: the minute's earlier matches are too; the last of the minute before is not.
            guard let earlier = self.last(through: minute * Self.microsecondsPerMinute - 1), earlier >= entry else {
                return nil
            }
            last = earlier
        }
        return last
    }

    /// Whether the year matches (and is not past the last one systemd considers).
    private func matches(year: Int) -> Bool {
        year <= CalendarSpecification.maximumYear
            && self.specification.matches(self.specification.year, isDay: false, value: year)
    }

    /// The matching days of the month that starts on day `first` (days since 1970-01-01).
    private func matchingDays(year: Int, month: Int, first: Int, length: Int) -> UInt64 {
        guard self.months & (1 << month) != 0, self.matches(year: year) else { return 0 }
        let weekdayOfFirst = CivilTime.floorDivide(first + 3, 7).remainder
        return self.daysByLength[length - 28] & self.daysByFirstWeekday[weekdayOfFirst]
    }

    /// The occurrences the walk finds in `(after, through]` (microseconds since 1970-01-01 on
    /// a clock that reads local time) from a search that starts just after `after`: how many,
    /// and the last. Stops early, before a gap of more than ``longestCountedGap`` days between
    /// matching days (or after `after`'s day).
    func count(after: Int, through: Int) -> (count: Int, last: Int?) {
        guard self.perDay > 0, through > after else { return (0, nil) }
        let (firstDay, firstTime) = CivilTime.floorDivide(after, Self.microsecondsPerDay)
        let (lastDay, lastTime) = CivilTime.floorDivide(through, Self.microsecondsPerDay)
        var count = 0
        var last: Int?
        var lastMatchingDay = firstDay
        var previousMatches = false
        do {
            let date = CivilTime.date(days: firstDay)
            let length = CivilTime.daysInMonth(year: date.year, month: date.month)
            let days = self.matchingDays(
                year: date.year, month: date.month, first: firstDay - date.day + 1, length: length)
            if days & (1 << date.day) != 0 {
                previousMatches = true
                let end = lastDay == firstDay ? lastTime : Self.microsecondsPerDay - 1
                let found = self.walkCount(from: firstTime + 1, through: end)
                if found > 0, let time = self.walkLast(from: firstTime + 1, through: end) {
                    count += found
                    last = firstDay * Self.microsecondsPerDay + time
                }
            }
        }
        var day = firstDay + 1
        while day <= lastDay {
            let date = CivilTime.date(days: day)
            let length = CivilTime.daysInMonth(year: date.year, month: date.month)
            let first = day - date.day + 1
            let monthEnd = first + length - 1
            var matching = self.matchingDays(year: date.year, month: date.month, first: first, length: length)
            if date.month == 1 && self.januaryEntry > 1 && first > firstDay && self.months & (1 << 12) != 0
                && self.matches(year: date.year - 1)
            {
                matching &= ~((1 << self.januaryEntry) - 1)
            }
            // Days entered from a matching day with a carry.
            let fromBefore: UInt64 = previousMatches ? 1 << 1 : 0
            let carried =
                self.carriesEveryDay ? matching & ((matching << 1) | fromBefore) : matching & fromBefore
            previousMatches = matching & (1 << length) != 0
            // Only the days from `day` through `lastDay`, the last of them apart.
            let top = min(monthEnd, lastDay) - first + 1
            var days = matching & ~((1 << date.day) - 1) & ((1 << (top + 1)) - 1)
            var partial = false
            if lastDay <= monthEnd && days & (1 << (lastDay - first + 1)) != 0 {
                days &= ~(1 << (lastDay - first + 1))
                partial = true
            }
            if days != 0 {
                let earliest = first + days.trailingZeroBitCount - 1
                if earliest - lastMatchingDay > Self.longestCountedGap { return (count, last) }
                count += (days & carried).nonzeroBitCount * self.perDayCarried
                count += (days & ~carried).nonzeroBitCount * self.perDayEntered
                lastMatchingDay = first + (63 - days.leadingZeroBitCount) - 1
                last = lastMatchingDay * Self.microsecondsPerDay + self.lastTimeOfDay
            }
            if partial {
                if lastDay - lastMatchingDay > Self.longestCountedGap { return (count, last) }
                let entry = carried & (1 << (lastDay - first + 1)) != 0 ? self.entryAfterCarry : 0
                let found = self.walkCount(from: entry, through: lastTime)
                if found > 0, let time = self.walkLast(from: entry, through: lastTime) {
                    count += found
                    last = lastDay * Self.microsecondsPerDay + time
                }
            }
            day = monthEnd + 1
        }
        return (count, last)
    }
}

extension TimeZoneRules {
    /// The stretch of instants `[start, end)` around `instant` over which the local time type
    /// stays `type` (pieces of equal type joined, a few either way), an inserted leap second
    /// at its start left out. `start` > `instant` when `instant` is that leap second.
    func constantStretch(containing instant: Int) -> (type: LocalTimeType, start: Int, end: Int) {
        let piece = self.localTime(at: instant)
        var start = piece.validFrom
        var end = piece.validUntil
        func same(_ other: LocalTimeType) -> Bool {
            other.utcOffset == piece.type.utcOffset && other.isDST == piece.type.isDST
        }
        for _ in 0..<4 where start != .min && !self.isInsertedLeapSecond(start) {
            let before = self.localTime(at: start - 1)
            guard same(before.type), before.validFrom < start else { break }
            start = before.validFrom
        }
        for _ in 0..<4 where end != .max {
            let after = self.localTime(at: end)
            guard same(after.type), after.validUntil > end, !self.isInsertedLeapSecond(end) else { break }
            end = after.validUntil
        }
        if start != .min && self.isInsertedLeapSecond(start) { start += 1 }
        return (piece.type, start, end)
    }
}
