/// Why a specification was refused, and where: the detail of a `.invalidSchedule` error.
struct CalendarParseFailure: Error {
    var reason: String
    /// The byte offset in the specification where parsing stopped.
    var offset: Int
}

/// systemd's `calendar_spec_from_string` (systemd 252, `src/shared/calendarspec.c`), over the
/// specification's UTF-8 bytes, zone suffix already removed. Iterative: no input makes it
/// recurse, loop without consuming, or allocate more than the input's size.
struct CalendarParser {
    /// A list longer than systemd's limit (`CALENDARSPEC_COMPONENTS_MAX` + 1) is refused.
    static let maximumComponents = 241

    private let bytes: [UInt8]
    private var index = 0
    /// The zone `@seconds` is broken down in: glibc's `gmtime_r`, UTC with the leap seconds of
    /// a `right/` local zone.
    private let timestampZone: TimeZoneRules

    /// A parser of `bytes`: the specification with its zone removed from the end, so offsets
    /// in errors are offsets in the specification as given.
    init(_ bytes: [UInt8], timestampZone: TimeZoneRules = .utc) {
        self.bytes = bytes
        self.timestampZone = timestampZone
    }

    private var current: UInt8 { self.index < self.bytes.count ? self.bytes[self.index] : 0 }
    private func byte(at offset: Int) -> UInt8 {
        self.index + offset < self.bytes.count ? self.bytes[self.index + offset] : 0
    }

    private func failure(_ reason: String) -> CalendarParseFailure {
        CalendarParseFailure(reason: reason, offset: self.index)
    }

    private mutating func skipSpaces() {
        while self.current == UInt8(ascii: " ") { self.index += 1 }
    }

    /// The expression after the shorthands: `[weekdays] [date] [time]`.
    mutating func parseExpression(into spec: inout CalendarSpecification) throws(CalendarParseFailure) {
        try self.parseWeekdays(into: &spec)
        let dateWasTimestamp = try self.parseDate(into: &spec)
        if !dateWasTimestamp { try self.parseTime(into: &spec) }
        guard self.index == self.bytes.count else { throw self.failure("unexpected text") }
    }

    private static let weekdayNames: [(String, Int)] = [
        ("monday", 0), ("mon", 0), ("tuesday", 1), ("tue", 1), ("wednesday", 2), ("wed", 2),
        ("thursday", 3), ("thu", 3), ("friday", 4), ("fri", 4), ("saturday", 5), ("sat", 5),
        ("sunday", 6), ("sun", 6),
    ]

    private func matchesWeekday(_ name: String) -> Bool {
        var offset = 0
        for expected in name.utf8 {
            let byte = self.byte(at: offset)
            guard byte | 0x20 == expected, byte >= UInt8(ascii: "A") else { return false }
            offset += 1
        }
        return true
    }

    private mutating func parseWeekdays(into spec: inout CalendarSpecification) throws(CalendarParseFailure) {
        var rangeStart = -1
        var first = true
        while true {
            guard let (name, number) = Self.weekdayNames.first(where: { self.matchesWeekday($0.0) }) else {
                if first { return }
                throw self.failure("expected a weekday")
            }
            let following = self.byte(at: name.utf8.count)
            guard [0, UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ","), UInt8(ascii: " ")].contains(following)
            else { throw self.failure("unknown weekday") }
            spec.weekdays |= 1 << number
            if rangeStart >= 0 {
                guard rangeStart <= number else { throw self.failure("weekday range runs backwards") }
                for day in (rangeStart + 1)..<max(rangeStart + 1, number) { spec.weekdays |= 1 << day }
            }
            self.index += name.utf8.count
            if self.current == 0 { return }
            if self.current == UInt8(ascii: " ") {
                self.skipSpaces()
                return
            }
            if self.current == UInt8(ascii: ".") {
                guard rangeStart < 0, self.byte(at: 1) == UInt8(ascii: ".") else {
                    throw self.failure("expected '..' in a weekday range")
                }
                rangeStart = number
                self.index += 2
            } else if self.current == UInt8(ascii: "-") {
                // A range with "-", for compatibility with old systemd.
                guard rangeStart < 0 else { throw self.failure("weekday range of a range") }
                rangeStart = number
                self.index += 1
            } else if self.current == UInt8(ascii: ",") {
                rangeStart = -1
                self.index += 1
            }
            // A trailing comma is allowed, an open range is not.
            if self.current == 0 || self.current == UInt8(ascii: " ") {
                self.skipSpaces()
                guard rangeStart < 0 else { throw self.failure("weekday range without an end") }
                return
            }
            first = false
        }
    }

    /// `[year-]month-day`, with `~` for days from the end of the month, or `@epoch-seconds`.
    /// true: a timestamp, which carries its time too.
    private mutating func parseDate(into spec: inout CalendarSpecification) throws(CalendarParseFailure) -> Bool {
        if self.current == 0 { return false }
        if self.current == UInt8(ascii: "@") {
            self.index += 1
            // systemd's `safe_atou64`: `strtoull` after leading white space, so a sign may come
            // first (`@+5`, `@ 5`); a minus only before a value of 0 (`@-0`); nothing may follow.
            while [9, 10, 11, 12, 13, 32].contains(self.current) { self.index += 1 }
            let negative = self.current == UInt8(ascii: "-")
            if negative || self.current == UInt8(ascii: "+") { self.index += 1 }
            guard let seconds = try self.number(), seconds <= UInt64(Int.max) else {
                throw self.failure("expected seconds")
            }
            guard !negative || seconds == 0 else { throw self.failure("negative seconds") }
            // gmtime_r of the seconds, as a fixed UTC date and time.
            var converter = LocalTimeConverter(zone: self.timestampZone)
            let time = converter.brokenDown(Int(seconds))
            func fixed(_ value: Int) -> [CalendarComponent] {
                [CalendarComponent(start: value, stop: -1, repetition: 0)]
            }
            spec.utc = true
            spec.year = fixed(time.year)
            spec.month = fixed(time.month + 1)
            spec.day = fixed(time.day)
            spec.hour = fixed(time.hour)
            spec.minute = fixed(time.minute)
            spec.microsecond = fixed(time.second * CalendarSpecification.microsecondsPerSecond)
            return true
        }
        let start = self.index
        let first = try self.parseChain(microseconds: false)
        // At the end, or a ':': that was a time, not a date.
        if self.current == 0 || self.current == UInt8(ascii: ":") {
            self.index = start
            return false
        }
        try self.parseDateSeparator(into: &spec)
        let second = try self.parseChain(microseconds: false)
        if self.current == 0 || self.current == UInt8(ascii: " ") {
            self.skipSpaces()
            spec.month = first
            spec.day = second
            return false
        }
        guard !spec.endOfMonth else { throw self.failure("'~' must separate the month and the day") }
        try self.parseDateSeparator(into: &spec)
        let third = try self.parseChain(microseconds: false)
        guard self.current == 0 || self.current == UInt8(ascii: " ") else {
            throw self.failure("unexpected text after the date")
        }
        self.skipSpaces()
        spec.year = first
        spec.month = second
        spec.day = third
        return false
    }

    /// `-`, or `~` (the day counts back from the end of the month).
    private mutating func parseDateSeparator(into spec: inout CalendarSpecification) throws(CalendarParseFailure) {
        if self.current == UInt8(ascii: "~") {
            spec.endOfMonth = true
        } else if self.current != UInt8(ascii: "-") {
            throw self.failure("expected '-' or '~' in a date")
        }
        self.index += 1
    }

    /// `hour:minute[:second]`; nothing at all is 00:00:00.
    private mutating func parseTime(into spec: inout CalendarSpecification) throws(CalendarParseFailure) {
        let zero = [CalendarComponent(start: 0, stop: -1, repetition: 0)]
        if self.current == 0 {
            spec.hour = zero
            spec.minute = zero
            spec.microsecond = zero
            return
        }
        let hour = try self.parseChain(microseconds: false)
        guard self.current == UInt8(ascii: ":") else { throw self.failure("expected ':' after the hour") }
        self.index += 1
        let minute = try self.parseChain(microseconds: false)
        var second = zero
        if self.current != 0 {
            guard self.current == UInt8(ascii: ":") else { throw self.failure("expected ':' after the minute") }
            self.index += 1
            second = try self.parseChain(microseconds: true) ?? zero
            guard self.current == 0 else { throw self.failure("unexpected text after the time") }
        }
        spec.hour = hour
        spec.minute = minute
        spec.microsecond = second
    }

    /// `*` (nil, or every whole second for seconds) or a comma-separated list of components.
    private mutating func parseChain(microseconds: Bool) throws(CalendarParseFailure) -> [CalendarComponent]? {
        if self.current == UInt8(ascii: "*") {
            self.index += 1
            return microseconds
                ? [CalendarComponent(start: 0, stop: -1, repetition: CalendarSpecification.microsecondsPerSecond)] : nil
        }
        var chain: [CalendarComponent] = []
        while true {
            guard chain.count < Self.maximumComponents else {
                throw self.failure("more than \(Self.maximumComponents) values in one list")
            }
            chain.append(try self.parseComponent(microseconds: microseconds))
            guard self.current == UInt8(ascii: ",") else { return chain }
            self.index += 1
        }
    }

    private mutating func parseComponent(microseconds: Bool) throws(CalendarParseFailure) -> CalendarComponent {
        let unit = microseconds ? CalendarSpecification.microsecondsPerSecond : 1
        let start = try self.decimal(microseconds: microseconds)
        var stop = -1
        var repetition = 0
        if self.current == UInt8(ascii: "."), self.byte(at: 1) == UInt8(ascii: ".") {
            self.index += 2
            stop = try self.decimal(microseconds: microseconds)
            repetition = unit
        }
        if self.current == UInt8(ascii: "/") {
            self.index += 1
            repetition = try self.decimal(microseconds: microseconds)
            guard repetition != 0 else { throw self.failure("a repetition of 0 never advances") }
        } else {
            guard start <= Int(Int32.max) - repetition else { throw self.failure("value out of range") }
            // Without a repetition, seconds step by whole seconds: a range shorter than one is empty.
            if microseconds && stop >= 0 && start + repetition > stop {
                throw self.failure("a range of seconds shorter than one second")
            }
        }
        let following = self.current
        guard
            [0, UInt8(ascii: " "), UInt8(ascii: ","), UInt8(ascii: "-"), UInt8(ascii: "~"), UInt8(ascii: ":")]
                .contains(following)
        else { throw self.failure("unexpected character") }
        return CalendarComponent(start: start, stop: stop, repetition: repetition)
    }

    /// Decimal digits (systemd's `strtoul` after an `isdigit` check): nil when there are none;
    /// a value beyond 64 bits is an error.
    private mutating func number() throws(CalendarParseFailure) -> UInt64? {
        let start = self.index
        var value: UInt64 = 0
        while self.current >= UInt8(ascii: "0") && self.current <= UInt8(ascii: "9") {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(self.current - UInt8(ascii: "0")))
            guard !overflow1 && !overflow2 else { throw self.failure("number out of range") }
            value = sum
            self.index += 1
        }
        return self.index > start ? value : nil
    }

    /// A component's value; for seconds in microseconds, with up to six decimals (the seventh
    /// rounds) after a single `.`.
    private mutating func decimal(microseconds: Bool) throws(CalendarParseFailure) -> Int {
        guard let whole = try self.number() else { throw self.failure("expected a number") }
        var value = whole
        if microseconds {
            let (scaled, overflow) = value.multipliedReportingOverflow(
                by: UInt64(CalendarSpecification.microsecondsPerSecond))
            guard !overflow else { throw self.failure("number out of range") }
            value = scaled
            if self.current == UInt8(ascii: "."), self.byte(at: 1) != UInt8(ascii: ".") {
                self.index += 1
                var fraction: UInt64 = 0
                var digits = 0
                while digits < 6 {
                    guard self.current >= UInt8(ascii: "0") && self.current <= UInt8(ascii: "9") else {
                        if digits == 0 { throw self.failure("expected digits after '.'") }
                        break
                    }
                    fraction = fraction * 10 + UInt64(self.current - UInt8(ascii: "0"))
                    self.index += 1
                    digits += 1
                }
                for _ in digits..<6 { fraction *= 10 }
                if self.current >= UInt8(ascii: "5") && self.current <= UInt8(ascii: "9") { fraction += 1 }
                while self.current >= UInt8(ascii: "0") && self.current <= UInt8(ascii: "9") { self.index += 1 }
                let (sum, overflow) = value.addingReportingOverflow(fraction)
                guard !overflow else { throw self.failure("number out of range") }
                value = sum
            }
        }
        guard value <= UInt64(Int32.max) else { throw self.failure("number out of range") }
        return Int(value)
    }
}
