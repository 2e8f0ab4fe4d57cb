/// A POSIX `TZ` rule (`CET-1CEST,M3.5.0,M10.5.0/3`): the footer of a TZif file, which decides
/// local time after the file's last transition (RFC 8536, section 3.3), or the value of `TZ`.
///
/// Evaluated as glibc's `__tz_compute` does (the year is the UTC year of the instant), so that
/// local times agree with `localtime_r` and with `systemd-analyze` on this machine.
struct PosixTimeZoneRule: Sendable {
    /// One offset: its abbreviation and its offset east of UTC in seconds.
    struct Offset: Sendable {
        var name: String
        var utcOffset: Int
    }

    /// When a change happens: a day of the year, and seconds after local midnight (may be
    /// negative or past 24 hours, as RFC 8536 allows).
    struct Change: Sendable {
        enum Day: Sendable {
            /// `Jn`: 1...365, February 29 never counted.
            case julianNoLeap(Int)
            /// `n`: 0...365, February 29 counted.
            case zeroBasedDay(Int)
            /// `Mm.w.d`: day `d` (0 = Sunday) of week `w` (5 = the last) of month `m`.
            case monthWeekDay(month: Int, week: Int, weekday: Int)
        }
        var day: Day
        var secondsAfterMidnight: Int
    }

    var standard: Offset
    /// The daylight offset and the changes into it and out of it; nil: standard all year.
    var daylight: (offset: Offset, start: Change, end: Change)?

    /// The offset in effect at `instant` (seconds since the epoch, UTC), and whether it is
    /// daylight saving time; with the instants around it at which that answer can change.
    func localTime(at instant: Int) -> (type: LocalTimeType, validFrom: Int, validUntil: Int) {
        let standardType = LocalTimeType(utcOffset: self.standard.utcOffset, isDST: false)
        guard let daylight = self.daylight else { return (standardType, .min, .max) }
        let daylightType = LocalTimeType(utcOffset: daylight.offset.utcOffset, isDST: true)
        let year = CivilTime.date(days: CivilTime.floorDivide(instant, CivilTime.secondsPerDay).quotient).year
        // The change into daylight time is given in standard time, the change out of it in daylight time.
        let start = Self.instant(of: daylight.start, year: year) - self.standard.utcOffset
        let end = Self.instant(of: daylight.end, year: year) - daylight.offset.utcOffset
        let yearStart = CivilTime.days(year: year, month: 1, day: 1) * CivilTime.secondsPerDay
        let yearEnd = CivilTime.days(year: year + 1, month: 1, day: 1) * CivilTime.secondsPerDay
        // The year's two changes cut it into three pieces; the answer holds within a piece.
        let cuts = [yearStart, min(start, end), max(start, end), yearEnd]
        var index = 0
        while index < 2 && instant >= cuts[index + 1] { index += 1 }
        let from = max(cuts[index], yearStart)
        let until = min(cuts[index + 1], yearEnd)
        let isDST = start < end ? (instant >= start && instant < end) : (instant >= start || instant < end)
        return (isDST ? daylightType : standardType, from, max(until, from + 1))
    }

    /// Seconds since the epoch of the change in `year`, on a clock that reads local time.
    private static func instant(of change: Change, year: Int) -> Int {
        var days = CivilTime.days(year: year, month: 1, day: 1)
        switch change.day {
        case .julianNoLeap(let n):
            days += n - 1
            if n >= 60 && CivilTime.isLeap(year) { days += 1 }
        case .zeroBasedDay(let n):
            days += n
        case let .monthWeekDay(month, week, weekday):
            let first = CivilTime.days(year: year, month: month, day: 1)
            let firstWeekday = CivilTime.floorDivide(first + 4, 7).remainder
            var day = weekday - firstWeekday
            if day < 0 { day += 7 }
            let length = CivilTime.daysInMonth(year: year, month: month)
            var n = 1
            while n < week && day + 7 < length {
                day += 7
                n += 1
            }
            days = first + day
        }
        return days * CivilTime.secondsPerDay + change.secondsAfterMidnight
    }
}

extension PosixTimeZoneRule {
    /// Parses a POSIX `TZ` value (`std offset [dst [offset] [,start[/time],end[/time]]]`);
    /// nil when it is not one.
    init?(parsing text: String) {
        var scanner = RuleScanner(bytes: Array(text.utf8))
        guard let standardName = scanner.name(), let standardOffset = scanner.offset() else { return nil }
        self.standard = Offset(name: standardName, utcOffset: -standardOffset)
        self.daylight = nil
        if scanner.isAtEnd { return }
        guard let daylightName = scanner.name() else { return nil }
        var daylightOffset = self.standard.utcOffset + 3600
        if let offset = scanner.offset() { daylightOffset = -offset }
        // Without rules, POSIX leaves the changes to the implementation; glibc uses M3.2.0,M11.1.0.
        var start = Change(day: .monthWeekDay(month: 3, week: 2, weekday: 0), secondsAfterMidnight: 7200)
        var end = Change(day: .monthWeekDay(month: 11, week: 1, weekday: 0), secondsAfterMidnight: 7200)
        if !scanner.isAtEnd {
            guard scanner.take(","), let first = scanner.change(), scanner.take(","), let second = scanner.change(),
                scanner.isAtEnd
            else { return nil }
            start = first
            end = second
        }
        self.daylight = (Offset(name: daylightName, utcOffset: daylightOffset), start, end)
    }
}

/// The scanner behind ``PosixTimeZoneRule/init(parsing:)``.
private struct RuleScanner {
    let bytes: [UInt8]
    var index = 0

    var isAtEnd: Bool { self.index == self.bytes.count }

    private var current: UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    mutating func take(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue, self.current == ascii else { return false }
        self.index += 1
        return true
    }

    /// `<+0545>` or three or more letters.
    mutating func name() -> String? {
        if self.take("<") {
            let start = self.index
            while let byte = self.current, byte != UInt8(ascii: ">") { self.index += 1 }
            guard self.current != nil, self.index > start else { return nil }
            let name = String(decoding: self.bytes[start..<self.index], as: UTF8.self)
            self.index += 1
            return name
        }
        let start = self.index
        while let byte = self.current, (byte | 0x20) >= UInt8(ascii: "a"), (byte | 0x20) <= UInt8(ascii: "z") {
            self.index += 1
        }
        guard self.index - start >= 3 else { return nil }
        return String(decoding: self.bytes[start..<self.index], as: UTF8.self)
    }

    /// `[+-]hh[:mm[:ss]]` in seconds (POSIX sign: west of UTC is positive).
    mutating func offset() -> Int? {
        var sign = 1
        if self.take("-") { sign = -1 } else { _ = self.take("+") }
        guard let seconds = self.clock(maximumHours: 167) else { return nil }
        return sign * seconds
    }

    mutating func number(maximumDigits: Int) -> Int? {
        let start = self.index
        var value = 0
        while let byte = self.current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"),
            self.index - start < maximumDigits
        {
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            self.index += 1
        }
        return self.index > start ? value : nil
    }

    mutating func clock(maximumHours: Int) -> Int? {
        guard let hours = self.number(maximumDigits: 3), hours <= maximumHours else { return nil }
        var seconds = hours * 3600
        if self.take(":") {
            guard let minutes = self.number(maximumDigits: 2), minutes < 60 else { return nil }
            seconds += minutes * 60
            if self.take(":") {
                guard let secs = self.number(maximumDigits: 2), secs < 60 else { return nil }
                seconds += secs
            }
        }
        return seconds
    }

    /// `Jn`, `n` or `Mm.w.d`, then an optional `/time` (default 02:00).
    mutating func change() -> PosixTimeZoneRule.Change? {
        let day: PosixTimeZoneRule.Change.Day
        if self.take("J") {
            guard let n = self.number(maximumDigits: 3), (1...365).contains(n) else { return nil }
            day = .julianNoLeap(n)
        } else if self.take("M") {
            guard let month = self.number(maximumDigits: 2), (1...12).contains(month), self.take("."),
                let week = self.number(maximumDigits: 1), (1...5).contains(week), self.take("."),
                let weekday = self.number(maximumDigits: 1), weekday <= 6
            else { return nil }
            day = .monthWeekDay(month: month, week: week, weekday: weekday)
        } else {
            guard let n = self.number(maximumDigits: 3), n <= 365 else { return nil }
            day = .zeroBasedDay(n)
        }
        var seconds = 7200
        if self.take("/") {
            var sign = 1
            if self.take("-") { sign = -1 } else { _ = self.take("+") }
            guard let time = self.clock(maximumHours: 167) else { return nil }
            seconds = sign * time
        }
        return PosixTimeZoneRule.Change(day: day, secondsAfterMidnight: seconds)
    }
}
