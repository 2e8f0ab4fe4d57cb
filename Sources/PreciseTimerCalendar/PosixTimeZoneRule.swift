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
    /// glibc keeps a daylight part for every `TZ` that names one, even one whose rules it could
    /// not read (their changes then fall on fixed instants of each year, as glibc computes them).
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
        // glibc's test: the southern hemisphere only when the start comes after the end, so two
        // equal changes (a rule glibc could not read) mean standard time all year.
        let isDST = start <= end ? (instant >= start && instant < end) : (instant >= start || instant < end)
        return (isDST ? daylightType : standardType, from, max(until, from + 1))
    }

    /// Seconds since the epoch of the change in `year`, on a clock that reads local time.
    private static func instant(of change: Change, year: Int) -> Int {
        // glibc's `compute_change` counts from 1970-01-01 for every year up to 1970.
        var days = year > 1970 ? CivilTime.days(year: year, month: 1, day: 1) : 0
        switch change.day {
        case .julianNoLeap(let n):
            days += n - 1
            if n >= 60 && CivilTime.isLeap(year) { days += 1 }
        case .zeroBasedDay(let n):
            days += n
        case let .monthWeekDay(month, week, weekday):
            // glibc's `compute_change`, literally: the days before the month from its table (a
            // month of 13, which a lenient read can leave, is the whole year), Zeller's
            // congruence for the weekday of its first day, then `week` weeks on while they fit.
            let leap = CivilTime.isLeap(year)
            let daysBefore =
                CivilTime.days(year: year, month: min(month, 12), day: 1) - CivilTime.days(year: year, month: 1, day: 1)
            let before = month == 13 ? (leap ? 366 : 365) : daysBefore
            let m1 = (month + 9) % 12 + 1
            let yy0 = month <= 2 ? year - 1 : year
            let (yy1, yy2) = (yy0 / 100, yy0 % 100)
            var dow = ((26 * m1 - 2) / 10 + 1 + yy2 + yy2 / 4 + yy1 / 4 - 2 * yy1) % 7
            if dow < 0 { dow += 7 }
            var day = weekday - dow
            if day < 0 { day += 7 }
            let length = month <= 12 ? CivilTime.daysInMonth(year: year, month: month) : 0
            var n = 1
            while n < week {
                if day + 7 >= length { break }
                day += 7
                n += 1
            }
            days += before + day
        }
        return days * CivilTime.secondsPerDay + change.secondsAfterMidnight
    }
}

extension PosixTimeZoneRule {
    /// The rule glibc's `__tzset_parse_tz` (2.36) makes of `text`: it never refuses. A name it
    /// cannot read leaves the name empty and the offset 0 (UTC under that name: `TZ=Nowhere`
    /// runs in UTC as "Nowhere"); offsets are clamped (hours to 24, minutes and seconds to 59); a
    /// missing second change is `M11.1.0`, both missing `M3.2.0,M11.1.0`; a change it cannot
    /// read is day 0 at 00:00; text after what it read is ignored.
    ///
    /// - Parameter usingDefaultRules: Called when `text` names a daylight time but gives no
    ///   changes (`EST5EDT`, `EST5EDT,`), with the two offsets: glibc then takes the changes
    ///   from the zone file `posixrules`. true: the caller did; the rule returned is unused.
    init(leniently text: String, usingDefaultRules: (Offset, Offset) -> Bool = { _, _ in false }) {
        var scanner = RuleScanner(bytes: Array(text.utf8))
        let never = Change(day: .zeroBasedDay(0), secondsAfterMidnight: 0)
        self.standard = Offset(name: "", utcOffset: 0)
        self.daylight = nil
        guard let standardName = scanner.name() else {
            // Both names empty, both offsets 0; the (zeroed) changes never give daylight time.
            return
        }
        self.standard.name = standardName
        // Without an offset glibc keeps the name it read, offset 0, and no daylight time.
        guard let standardOffset = scanner.offset(required: true) else { return }
        self.standard.utcOffset = standardOffset
        if scanner.isAtEnd { return }
        var daylightOffset = Offset(name: "", utcOffset: 0)
        if let daylightName = scanner.name() {
            daylightOffset.name = daylightName
            daylightOffset.utcOffset = scanner.offset(required: false) ?? standardOffset + 3600
            if scanner.isAtEnd || scanner.remainder == [UInt8(ascii: ",")] {
                if usingDefaultRules(self.standard, daylightOffset) { return }
            }
        }
        let (start, read) = scanner.change(isStart: true)
        let end = read ? scanner.change(isStart: false).change : never
        self.daylight = (daylightOffset, start, end)
    }
}

/// The scanner behind ``PosixTimeZoneRule/init(leniently:usingDefaultRules:)``: glibc's
/// `parse_tzname`, `parse_offset` and `parse_rule`, with `sscanf("%hu")` for numbers.
private struct RuleScanner {
    let bytes: [UInt8]
    var index = 0

    var isAtEnd: Bool { self.index == self.bytes.count }
    var remainder: ArraySlice<UInt8> { self.bytes[self.index...] }

    private var current: UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    private mutating func take(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue, self.current == ascii else { return false }
        self.index += 1
        return true
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    private static func isDigit(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Three or more letters, or `<…>` around three or more letters, digits, `+` and `-`;
    /// nil (nothing consumed) otherwise.
    mutating func name() -> String? {
        let start = self.index
        while let byte = self.current, Self.isLetter(byte) { self.index += 1 }
        if self.index - start >= 3 { return String(decoding: self.bytes[start..<self.index], as: UTF8.self) }
        self.index = start
        guard self.take("<") else { return nil }
        let nameStart = self.index
        while let byte = self.current,
            Self.isLetter(byte) || Self.isDigit(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
        {
            self.index += 1
        }
        let nameEnd = self.index
        guard self.take(">"), nameEnd - nameStart >= 3 else {
            self.index = start
            return nil
        }
        return String(decoding: self.bytes[nameStart..<nameEnd], as: UTF8.self)
    }

    /// `sscanf("%hu")`: optional white space and sign, digits, kept modulo 2^16; nil (nothing
    /// consumed) without digits.
    private mutating func unsignedShort() -> Int? {
        let start = self.index
        while let byte = self.current, [9, 10, 11, 12, 13, 32].contains(byte) { self.index += 1 }
        var negative = false
        if self.current == UInt8(ascii: "-") || self.current == UInt8(ascii: "+") {
            negative = self.current == UInt8(ascii: "-")
            self.index += 1
        }
        guard Self.isDigit(self.current) else {
            self.index = start
            return nil
        }
        var value = 0
        while let byte = self.current, Self.isDigit(byte) {
            value = (value * 10 + Int(byte - UInt8(ascii: "0"))) & 0xFFFF
            self.index += 1
        }
        return negative ? (0x10000 - value) & 0xFFFF : value
    }

    /// `sscanf("%hu%n:%hu%n:%hu%n")`: hours, then minutes and seconds if present; nil without hours.
    private mutating func clock() -> (hours: Int, minutes: Int, seconds: Int)? {
        guard let hours = self.unsignedShort() else { return nil }
        var minutes = 0
        var seconds = 0
        let afterHours = self.index
        if self.take(":") {
            if let value = self.unsignedShort() {
                minutes = value
                let afterMinutes = self.index
                if self.take(":") {
                    if let value = self.unsignedShort() { seconds = value } else { self.index = afterMinutes }
                }
            } else {
                self.index = afterHours
            }
        }
        return (hours, minutes, seconds)
    }

    /// glibc's `parse_offset`, east of UTC: POSIX's sign (west is positive), hours clamped to
    /// 24, minutes and seconds to 59. The standard offset must start with a sign or a digit.
    mutating func offset(required: Bool) -> Int? {
        if required {
            guard let byte = self.current,
                byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || Self.isDigit(byte)
            else { return nil }
        }
        var sign = -1
        if self.current == UInt8(ascii: "+") || self.current == UInt8(ascii: "-") {
            sign = self.current == UInt8(ascii: "-") ? 1 : -1
            self.index += 1
        }
        guard let clock = self.clock() else { return nil }
        return sign * (min(clock.hours, 24) * 3600 + min(clock.minutes, 59) * 60 + min(clock.seconds, 59))
    }

    /// glibc's `parse_rule`: a leading `,` skipped; `Jn`, `n`, `Mm.w.d`, or nothing at all
    /// (`M3.2.0` for the start, `M11.1.0` for the end); then `/time` (default 02:00, not
    /// clamped, may be negative). `read` false where glibc's fails: the change is then what
    /// glibc is left with (the fields it had set, at 00:00), and no further rule is read.
    mutating func change(isStart: Bool) -> (change: PosixTimeZoneRule.Change, read: Bool) {
        _ = self.take(",")
        func failed(_ day: PosixTimeZoneRule.Change.Day) -> (change: PosixTimeZoneRule.Change, read: Bool) {
            (PosixTimeZoneRule.Change(day: day, secondsAfterMidnight: 0), false)
        }
        let day: PosixTimeZoneRule.Change.Day
        if self.current == UInt8(ascii: "J") || Self.isDigit(self.current) {
            let julian = self.take("J")
            let unread: PosixTimeZoneRule.Change.Day = julian ? .julianNoLeap(0) : .zeroBasedDay(0)
            guard Self.isDigit(self.current), let n = self.decimal(), n <= 365, !(julian && n == 0) else {
                return failed(unread)
            }
            day = julian ? .julianNoLeap(n) : .zeroBasedDay(n)
        } else if self.take("M") {
            // `sscanf("M%hu.%hu.%hu%n")`: the fields read before a mismatch stay set.
            var fields = [0, 0, 0]
            var count = 0
            while count < 3 {
                if count > 0 && !self.take(".") { break }
                guard let value = self.unsignedShort() else { break }
                fields[count] = value
                count += 1
            }
            let (month, week, weekday) = (fields[0], fields[1], fields[2])
            day = .monthWeekDay(month: month, week: week, weekday: weekday)
            guard count == 3, (1...12).contains(month), (1...5).contains(week), weekday <= 6 else {
                // glibc computes with what it read; a month outside 1...13 (or 13 past its
                // first week) reads outside its month table, which nothing can match: day 0.
                let defined = (1...12).contains(month) || (month == 13 && week <= 1)
                return failed(defined ? day : .zeroBasedDay(0))
            }
        } else if self.isAtEnd {
            day =
                isStart ? .monthWeekDay(month: 3, week: 2, weekday: 0) : .monthWeekDay(month: 11, week: 1, weekday: 0)
        } else {
            return failed(.zeroBasedDay(0))
        }
        var seconds = 7200
        if self.take("/") {
            guard !self.isAtEnd else { return failed(day) }
            let negative = self.take("-")
            let clock = self.clock() ?? (2, 0, 0)
            seconds = (negative ? -1 : 1) * (clock.hours * 3600 + clock.minutes * 60 + clock.seconds)
        } else if let byte = self.current, byte != UInt8(ascii: ",") {
            return failed(day)
        }
        return (PosixTimeZoneRule.Change(day: day, secondsAfterMidnight: seconds), true)
    }

    /// `strtoul` in base 10 over the digits here, saturating.
    private mutating func decimal() -> Int? {
        guard Self.isDigit(self.current) else { return nil }
        var value = 0
        while let byte = self.current, Self.isDigit(byte) {
            value = min(value * 10 + Int(byte - UInt8(ascii: "0")), Int(UInt32.max))
            self.index += 1
        }
        return value
    }
}
