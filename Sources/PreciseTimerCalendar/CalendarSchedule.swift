import Glibc
import PreciseTimerCore

/// A calendar schedule in systemd's `OnCalendar=` syntax (`systemd.time(7)`): "Mon..Fri 09:00",
/// "daily Europe/Berlin", "*-*-01 03:00:00", "*:0/15", "Sat *-*~07/1 04:00 UTC".
///
/// Give it to ``/PreciseTimerCore/TimerService/scheduleRepeating(id:on:options:_:)``:
///
/// ```swift
/// let nightly = try CalendarSchedule("*-*-* 03:00 Europe/Berlin")
/// try timers.scheduleRepeating(on: nightly) { tick in backUp() }
/// ```
///
/// Every answer is systemd 252's: `systemd-analyze calendar --iterations=5 'SPEC'` prints the
/// normalized form (``description``) and the next elapses ``next(after:)`` returns, and the
/// package's tests compare the two over thousands of specifications and base times. The
/// grammar: weekday names and ranges (`Mon..Fri`, `Sat,Sun`), `year-month-day` and
/// `hour:minute[:second]` with `*`, lists (`8,12,18`), ranges (`9..17`), repetitions (`0/15`,
/// `9..17/2`), days from the end of the month (`*-02~01` is the last day of February),
/// fractional seconds (`*:*:0.5`), `@seconds` since the epoch, the shorthands `minutely`,
/// `hourly`, `daily`, `weekly`, `monthly`, `quarterly`, `semiannually`, `yearly` /
/// `annually`, and an optional time zone at the end: `UTC`, a tzdata name, or the local zone's
/// abbreviation. Without one, local time.
///
/// Local times follow the zone's rules as systemd applies them: a local time that does not
/// exist (the hour skipped when clocks spring forward) is skipped; one that happens twice (the
/// hour repeated when they fall back) fires once, at its first occurrence.
///
/// Time zones are read from the system's tzdata (`/usr/share/zoneinfo`, the files glibc and
/// systemd read, each loaded once per process); the local zone is the process's `TZ`, else
/// `/etc/localtime`, read when the schedule is created, as glibc reads them: `$TZDIR` for
/// relative names, a `TZ` that names no file read as a POSIX rule as leniently as glibc does (a
/// `TZ` that names nothing is UTC under that name), a rule without changes completed from
/// `posixrules`. A zone suffix must name a file under `/usr/share/zoneinfo` (systemd's check)
/// and is then read from `$TZDIR`. `right/` zones count leap seconds as glibc does: local
/// times there are 27 s later than in the plain zone today, and so is UTC (`… UTC`, `@…`) in a
/// process whose local zone is one. No Foundation.
///
/// After a clock step or a suspend, ``occurrences(after:notAfter:)`` counts what was passed
/// over exactly (the number of answers ``next(after:)`` would give one after another) without
/// walking it: 56 years of `*:*:0/1` in one call, in milliseconds.
///
/// - Important: ``next(after:)`` is pure arithmetic on the instant (no file access, no lock),
///   as ``/PreciseTimerCore/WallClockSchedule`` requires: a service calls it with its
///   registry's lock held. Files are read only when a schedule is created.
public struct CalendarSchedule: WallClockSchedule, Hashable, CustomStringConvertible {
    /// The text the schedule was created from, as given.
    public let specification: String
    /// systemd's normalized form: `Mon..Fri *-*-* 09:00:00 Europe/Berlin` for `Mon..Fri 09:00 Europe/Berlin`.
    public let description: String
    /// The zone the schedule's local times are read in: a tzdata name (`Europe/Berlin`),
    /// `UTC`, or, for a specification without a zone, where the local zone came from (the
    /// value of `TZ`, or `localtime` for `/etc/localtime`).
    public var timeZoneName: String { self.zone.name }

    private let parsed: CalendarSpecification
    private let zone: TimeZoneRules

    /// Parses a specification.
    ///
    /// - Parameter specification: An `OnCalendar=` expression, as `systemd-analyze calendar` takes it.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError`` with code
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/invalidSchedule``, `value` the
    ///   specification, and `detail` what is wrong and where (a byte offset), for text that
    ///   systemd refuses: an unknown word or zone, a value out of range (`25:00`, `*-13-01`),
    ///   a repetition of 0 (`*:*:0/0`), a year past 2199, more than 241 values in one list.
    ///   Never traps, and takes time linear in the specification's length.
    public init(_ specification: String) throws(PreciseTimerError) {
        try self.init(
            specification, localZone: TimeZoneDirectory.localZone(),
            zoneDirectory: getenv("TZDIR").map { String(cString: $0) })
    }

    /// Parses a specification as a process whose environment has `TZ` set to `localTimeZone`
    /// (nil: unset) and `TZDIR` to `zoneDirectory` (nil: unset) would: for tests of
    /// local-time specifications in zones other than the machine's.
    package init(
        _ specification: String, localTimeZone: String?, zoneDirectory: String? = nil
    ) throws(PreciseTimerError) {
        try self.init(
            specification, localZone: TimeZoneDirectory.localZone(tz: localTimeZone, directory: zoneDirectory),
            zoneDirectory: zoneDirectory)
    }

    private init(
        _ specification: String, localZone local: TimeZoneRules, zoneDirectory: String?
    ) throws(PreciseTimerError) {
        self.specification = specification
        func refuse(_ reason: String, at offset: Int? = nil) -> PreciseTimerError {
            let place = offset.map { " at offset \($0)" } ?? ""
            return PreciseTimerError(.invalidSchedule, value: specification, detail: reason + place)
        }
        var bytes = Array(specification.utf8)
        if let nul = bytes.firstIndex(of: 0) { throw refuse("a NUL byte", at: nul) }
        var spec = CalendarSpecification()
        var namedZone: TimeZoneRules?
        var unknownZone: (name: String, offset: Int)?
        if Self.hasSuffix(bytes, " UTC") {
            spec.utc = true
            bytes.removeLast(4)
        } else {
            let names = [local.abbreviations.standard, local.abbreviations.daylight]
            if let match = names.indices.first(where: { index in
                guard let name = names[index], !name.isEmpty, bytes.count > name.utf8.count else { return false }
                return Self.hasSuffix(bytes, " " + name)
            }), let name = names[match] {
                spec.dst = match
                bytes.removeLast(name.utf8.count + 1)
            } else if let space = bytes.lastIndex(of: UInt8(ascii: " ")) {
                let name = String(decoding: bytes[(space + 1)...], as: UTF8.self)
                // systemd takes the last word as a zone only when it names a zone file: `1/2-1`
                // in `Mon 1/2-1` is a date. A word that looks like a zone and is not one names
                // the likely mistake if the rest does not parse.
                if TimeZoneDirectory.isValidName(name) {
                    if TimeZoneDirectory.isZone(name) {
                        spec.timeZone = name
                        namedZone = TimeZoneDirectory.zone(named: name, directory: zoneDirectory)
                        bytes.removeSubrange(space...)
                    } else if name.contains("/") {
                        unknownZone = (name, space + 1)
                    }
                }
            }
        }
        guard !bytes.isEmpty else { throw refuse("empty specification") }
        do throws(CalendarParseFailure) {
            try Self.parse(bytes, into: &spec, timestampZone: .utc(in: local))
        } catch {
            if let unknownZone {
                throw refuse("unknown time zone \"\(unknownZone.name)\"", at: unknownZone.offset)
            }
            throw refuse(error.reason, at: error.offset)
        }
        spec.normalize()
        if let field = spec.invalidField { throw refuse("\(field) out of range") }
        self.parsed = spec
        // `@epoch` and a zone named UTC are UTC too. glibc's UTC (`gmtime_r`, `timegm`) counts
        // the local zone's leap seconds when that is a `right/` zone.
        self.zone = spec.utc ? .utc(in: local) : (namedZone ?? local)
        self.description = spec.formatted(localAbbreviations: self.zone.abbreviations)
    }

    private static func hasSuffix(_ bytes: [UInt8], _ suffix: String) -> Bool {
        let tail = Array(suffix.utf8)
        guard bytes.count >= tail.count else { return false }
        return zip(bytes[(bytes.count - tail.count)...], tail).allSatisfy { lhs, rhs in
            lhs == rhs
                || (lhs | 0x20 == rhs | 0x20 && (rhs | 0x20) >= UInt8(ascii: "a") && (rhs | 0x20) <= UInt8(ascii: "z"))
        }
    }

    private static let shorthands: [String: (weekdays: Int, months: [Int]?, day: Int?, hour: Int?, minute: Int?)] = [
        "minutely": (0, nil, nil, nil, nil),
        "hourly": (0, nil, nil, nil, 0),
        "daily": (0, nil, nil, 0, 0),
        "monthly": (0, nil, 1, 0, 0),
        "weekly": (1, nil, nil, 0, 0),
        "yearly": (0, [1], 1, 0, 0),
        "annually": (0, [1], 1, 0, 0),
        "anually": (0, [1], 1, 0, 0),
        "quarterly": (0, [1, 4, 7, 10], 1, 0, 0),
        "semiannually": (0, [1, 7], 1, 0, 0),
        "semi-annually": (0, [1, 7], 1, 0, 0),
        "biannually": (0, [1, 7], 1, 0, 0),
        "bi-annually": (0, [1, 7], 1, 0, 0),
    ]

    private static func parse(
        _ bytes: [UInt8], into spec: inout CalendarSpecification, timestampZone: TimeZoneRules
    ) throws(CalendarParseFailure) {
        let lowercased = String(
            decoding: bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
        guard let shorthand = Self.shorthands[lowercased] else {
            var parser = CalendarParser(bytes, timestampZone: timestampZone)
            try parser.parseExpression(into: &spec)
            return
        }
        func fixed(_ value: Int) -> [CalendarComponent] { [CalendarComponent(start: value, stop: -1, repetition: 0)] }
        spec.weekdays = shorthand.weekdays
        spec.month = shorthand.months?.map { CalendarComponent(start: $0, stop: -1, repetition: 0) }
        spec.day = shorthand.day.map(fixed)
        spec.hour = shorthand.hour.map(fixed)
        spec.minute = shorthand.minute.map(fixed)
        spec.microsecond = fixed(0)
    }

    /// The first occurrence strictly after `instant`, or nil when the schedule has none (a
    /// fixed date that has passed, a year range that has ended, or a date past 2199, the last
    /// year systemd considers). Occurrences fall on whole microseconds.
    ///
    /// Where systemd reports an error instead of an elapse:
    /// - after a base past 9999-12-30 23:59:59 UTC (systemd's `USEC_TIMESTAMP_FORMATTABLE_MAX`),
    ///   `calendar_spec_next_usec` returns `-EINVAL` ("Failed to determine next elapse for
    ///   'daily': Invalid argument"). No `WallClockInstant` gets there (its nanoseconds end on
    ///   2262-04-11); every instant after 2199 answers nil here and "never" in systemd.
    /// - when its search gives up after 1 000 steps without settling (`MAX_CALENDAR_ITERATIONS`,
    ///   meant for zones where `mktime` never converges), systemd returns `-EDEADLK` ("Resource
    ///   deadlock avoided"); the same walk stops here at the same step and answers nil, so a
    ///   timer with this schedule ends.
    ///
    /// A schedule whose occurrences run out (`2026-01-01` after it, `*-02-30`, a year past
    /// 2199, a daylight abbreviation where glibc finds no daylight time) is "never" in both.
    public func next(after instant: WallClockInstant) -> WallClockInstant? {
        let nanoseconds = instant.nanosecondsSinceEpoch
        let microseconds = nanoseconds < 0 ? -1 : Int(nanoseconds / 1000)
        guard let next = self.parsed.next(afterMicroseconds: microseconds, zone: self.zone) else { return nil }
        let (result, overflow) = next.multipliedReportingOverflow(by: 1000)
        return overflow ? nil : WallClockInstant(nanosecondsSinceEpoch: Int64(result))
    }

    /// The occurrences after `occurrence` that are not after `instant`, counted exactly: the
    /// latest, and how many there are (the answers ``next(after:)`` would give one after
    /// another from `occurrence`, to the last one not after `instant`). `nil` when there is none.
    ///
    /// A step of years takes one call and milliseconds: 1970 to 2026 under
    /// `*:*:0/1 Europe/Berlin` (1 767 060 000 occurrences) takes about 3 ms in a debug build.
    /// Where `next(after:)` is plain calendar arithmetic (every local time it looks at lies in
    /// one stretch of constant UTC offset, as between two DST changes) the occurrences are
    /// counted per civil day: matching days times matching times of day, less the matches
    /// systemd's search skips where it carries a value into the next field (`*:0/7` never
    /// fires at 00:00 after a day that fired). Where it is not (around a DST change, a leap
    /// second of a `right/` zone, a gap of more than 100 days between matching days) this
    /// walks `next(after:)` itself, usually a step or two per change; so a local time that
    /// does not exist is skipped and one that happens twice counted as the walk fires it.
    ///
    /// Three kinds of specification are walked where others are counted: one that names the
    /// local zone's abbreviation (`… CET`), while the zone keeps the other kind of time; one
    /// whose seconds field is neither a single repetition nor a list of at most 200 000 values
    /// (`*:*:0/0.000003,0.000001/0.000002`); and one with days from the end of the month (`~`),
    /// in a month where the zone skips a midnight on a day it looks at (America/Santiago's
    /// clocks skip midnight, `*-*~03 *:*:0/1` there from 1970 to 2026). Only when a
    /// call has walked 100 000 steps does it hand over to the protocol's default search:
    /// `latest` stays exact, `passed` is then a lower bound. Every other answer is exact.
    public func occurrences(after occurrence: WallClockInstant, notAfter instant: WallClockInstant) -> WallClockCatchUp?
    {
        let end = instant.nanosecondsSinceEpoch
        let start = occurrence.nanosecondsSinceEpoch
        guard end > start, end >= 0 else { return nil }
        let limit = Int(end / 1000)
        var base = start < 0 ? -1 : Int(start / 1000)
        let counter = CalendarCounter(self.parsed)
        var passed: UInt64 = 0
        var latest: Int?
        var walked = 0
        func answer() -> WallClockCatchUp? {
            latest.map {
                WallClockCatchUp(latest: WallClockInstant(nanosecondsSinceEpoch: Int64($0) * 1000), passed: passed)
            }
        }
        while true {
            if let counter, let run = self.countedRun(counter, after: base, through: limit) {
                passed &+= UInt64(run.count)
                base = run.last
                latest = run.last
            }
            guard walked < Self.walkingBudget else {
                let from = WallClockInstant(nanosecondsSinceEpoch: Int64(base) * 1000)
                guard let rest = StepByStep(schedule: self).occurrences(after: from, notAfter: instant) else {
                    return answer()
                }
                return WallClockCatchUp(latest: rest.latest, passed: passed &+ rest.passed)
            }
            guard let next = self.parsed.next(afterMicroseconds: base, zone: self.zone), next > base, next <= limit
            else { return answer() }
            walked += 1
            passed &+= 1
            base = next
            latest = next
        }
    }

    /// Steps of `next(after:)` after which ``occurrences(after:notAfter:)`` stops walking.
    private static let walkingBudget = 100_000

    /// The occurrences after `base` (microseconds) up to `limit` that `next(after:)` finds by
    /// plain calendar arithmetic, one after another: how many (at least 1) and the last; nil
    /// when the walk from `base` is not known to be arithmetic.
    ///
    /// The walk from a base is arithmetic when its first `mktime`, of the base's own local
    /// time with its own daylight flag and no memory of an earlier offset, answers the base's
    /// instant, and every local time it looks at after that lies in the same stretch of
    /// constant offset: each later `mktime` then starts from that offset and stops at once
    /// (with the daylight flag a specification may name, when it is the stretch's). The first
    /// `mktime` depends on its input only through the types it looks up, so one conversion
    /// with ``LocalTimeConverter/beginUniformityTracking()`` answers for every base whose
    /// look-ups would have found the same types.
    private func countedRun(_ counter: CalendarCounter, after base: Int, through limit: Int) -> (count: Int, last: Int)?
    {
        guard base < limit else { return nil }
        let perSecond = CalendarSpecification.microsecondsPerSecond
        let second = CivilTime.floorDivide(base + 1, perSecond).quotient
        var offset = 0
        var stretchStart = Int.min
        var stretchEnd = Int.max
        var basesEnd = Int.max
        if self.zone.isUTC {
            guard self.parsed.dst != 1 else { return nil }
        } else {
            var converter = LocalTimeConverter(zone: self.zone)
            converter.beginUniformityTracking()
            var local = converter.brokenDown(second)
            let found = converter.makeTime(&local)
            let window = converter.endUniformityTracking()
            guard found == second, window.low <= 0, window.high > 0 else { return nil }
            let stretch = self.zone.constantStretch(containing: second)
            guard stretch.start <= second, second < stretch.end else { return nil }
            if self.parsed.dst >= 0 && stretch.type.isDST != (self.parsed.dst == 1) { return nil }
            offset = stretch.type.utcOffset
            stretchStart = stretch.start
            stretchEnd = stretch.end
            basesEnd = min(window.high == .max ? .max : second + window.high, stretchEnd)
        }
        // Every occurrence counted is the base of the next one: its search starts before `basesEnd`.
        var through = limit
        if basesEnd != .max && basesEnd <= Int.max / perSecond { through = min(through, basesEnd * perSecond - 2) }
        if stretchEnd != .max && stretchEnd <= Int.max / perSecond {
            through = min(through, stretchEnd * perSecond - 1)
        }
        let civilAfter = base + offset * perSecond
        var civilThrough = through + offset * perSecond
        if stretchEnd != .max && stretchEnd < Int.max / (2 * perSecond) && !self.zone.isUTC {
            // What the search carries past a field's end is converted where it lands (and its
            // daylight flag kept): in the stretch too.
            civilThrough = min(civilThrough, (stretchEnd + offset) * perSecond - 1 - counter.carryReach)
        }
        if self.parsed.endOfMonth && !self.zone.isUTC {
            guard
                let bound = self.endOfMonthBound(
                    offset: offset, stretchStart: stretchStart, stretchEnd: stretchEnd, civilAfter: civilAfter)
            else { return nil }
            civilThrough = min(civilThrough, bound)
        }
        guard civilThrough > civilAfter else { return nil }
        let run = counter.count(after: civilAfter, through: civilThrough)
        guard run.count > 0, let last = run.last else { return nil }
        return (run.count, last - offset * perSecond)
    }

    /// For a specification with days from the end of the month: the last local time
    /// (microseconds) a counted run from `civilAfter` may reach in the stretch
    /// `[stretchStart, stretchEnd)` of offset `offset`; nil when the run cannot start there.
    ///
    /// systemd's `find_end_of_month` converts a time elsewhere in the month, perhaps in
    /// another stretch, and `mktime` then starts its next conversions from that stretch's
    /// offset. A local time that exists once still converts to its instant from the offset of
    /// this stretch or of either neighbour (in at most three probes), so the run must stay
    /// clear of the local times a neighbour repeats, the month must reach no stretch beyond
    /// the neighbours, and the conversion elsewhere must keep its day: no skipped local time
    /// may touch a midnight. A specification with a daylight flag keeps to months wholly
    /// inside the stretch.
    private func endOfMonthBound(offset: Int, stretchStart: Int, stretchEnd: Int, civilAfter: Int) -> Int? {
        let perSecond = CalendarSpecification.microsecondsPerSecond
        let perDay = CalendarCounter.microsecondsPerDay
        let day = CivilTime.secondsPerDay
        let startDay = CivilTime.floorDivide(civilAfter + 1, perDay).quotient
        let monthStart = startDay - CivilTime.date(days: startDay).day + 1
        if self.parsed.dst >= 0 {
            guard stretchStart == .min || (monthStart - 1) * day >= stretchStart + offset else { return nil }
            guard stretchEnd != .max else { return .max }
            let capDay = CivilTime.floorDivide(stretchEnd + offset, day).quotient - 3
            return (capDay - CivilTime.date(days: capDay).day + 1) * perDay - 1
        }
        // A skipped local time that touches a midnight may move a conversion to another day:
        // only if a conversion for a month near it falls on one of its days.
        func touchesMidnight(_ from: Int, _ until: Int) -> Bool {
            guard
                from % day == 0
                    || CivilTime.floorDivide(from, day).quotient != CivilTime.floorDivide(until, day).quotient
            else { return false }
            let first = CivilTime.floorDivide(from, day).quotient - 1
            let last = CivilTime.floorDivide(until, day).quotient + 1
            // The months whose conversions reach those days: from two months before to the one after.
            let date = CivilTime.date(days: first)
            var month = (date.year, date.month)
            for _ in 0..<2 { month = month.1 == 1 ? (month.0 - 1, 12) : (month.0, month.1 - 1) }
            for _ in 0..<4 {
                let start = CivilTime.days(year: month.0, month: month.1, day: 1)
                let next = start + CivilTime.daysInMonth(year: month.0, month: month.1)
                for component in self.parsed.day ?? [] {
                    for fromEnd in [component.start, component.stop]
                    where (next - fromEnd) >= first && (next - fromEnd) <= last {
                        return true
                    }
                }
                month = month.1 == 12 ? (month.0 + 1, 1) : (month.0, month.1 + 1)
            }
            return false
        }
        // A month (and a day or two either side) inside the stretch asks nothing more.
        if stretchStart != .min && (monthStart - 2) * day - offset < stretchStart {
            let before = self.zone.constantStretch(containing: stretchStart - 1)
            let repeatedUntil = stretchStart + max(offset, before.type.utcOffset)
            guard civilAfter + 1 >= repeatedUntil * perSecond,
                before.start == .min || before.start + 2 * day <= (monthStart - 1) * day - offset,
                before.type.utcOffset >= offset
                    || !touchesMidnight(stretchStart + before.type.utcOffset, stretchStart + offset)
            else { return nil }
        }
        guard stretchEnd != .max else { return .max }
        let insideDay = CivilTime.floorDivide(stretchEnd + offset, day).quotient - 4
        let inside = (insideDay - CivilTime.date(days: insideDay).day + 1) * perDay - 1
        let after = self.zone.constantStretch(containing: stretchEnd)
        guard after.start == stretchEnd,
            after.type.utcOffset <= offset || !touchesMidnight(stretchEnd + offset, stretchEnd + after.type.utcOffset)
        else { return inside }
        var bound = (stretchEnd + min(offset, after.type.utcOffset)) * perSecond - 1
        if after.end != .max {
            // Months that reach past the neighbour stay out.
            let capDay = CivilTime.floorDivide(after.end + min(offset, after.type.utcOffset), day).quotient - 5
            bound = min(bound, (capDay - CivilTime.date(days: capDay).day + 1) * perDay - 1)
        }
        return max(bound, inside)
    }

    /// Two schedules are equal when they name the same occurrences in the same zone: equal
    /// normalized forms (`Mon..Fri 9:00` and `Mon-Fri 09:00:00` are equal).
    public static func == (lhs: CalendarSchedule, rhs: CalendarSchedule) -> Bool {
        lhs.parsed == rhs.parsed && lhs.zone.name == rhs.zone.name
            && lhs.zone.leapSeconds.count == rhs.zone.leapSeconds.count
    }

    /// Hashes what ``==(_:_:)`` compares: the normalized specification and the zone's name.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.parsed)
        hasher.combine(self.zone.name)
        hasher.combine(self.zone.leapSeconds.count)
    }
}

/// A schedule that walks a ``CalendarSchedule`` with the protocol's default catch-up search.
private struct StepByStep: WallClockSchedule {
    let schedule: CalendarSchedule

    func next(after instant: WallClockInstant) -> WallClockInstant? {
        self.schedule.next(after: instant)
    }
}
