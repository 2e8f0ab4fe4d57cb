/// One element of a component's list: a value, a range `start..stop`, a repetition
/// `start/repeat` or both (`start..stop/repeat`): systemd's `CalendarComponent`.
struct CalendarComponent: Hashable, Sendable, Comparable {
    var start: Int
    /// -1: no end.
    var stop: Int
    /// 0: no repetition.
    var repetition: Int

    static func < (lhs: CalendarComponent, rhs: CalendarComponent) -> Bool {
        (lhs.start, lhs.stop, lhs.repetition) < (rhs.start, rhs.stop, rhs.repetition)
    }
}

/// A parsed and normalized `OnCalendar=` expression: systemd's `CalendarSpec`.
///
/// Each field is a list of components, or nil for `*`. Seconds are kept in microseconds, as
/// systemd keeps them (`12:00:00.25`).
struct CalendarSpecification: Hashable, Sendable {
    static let weekdayBitsAll = 127
    static let minimumYear = 1970
    static let maximumYear = 2199
    static let microsecondsPerSecond = 1_000_000

    /// Bit 0 = Monday ... bit 6 = Sunday; -1: any day.
    var weekdays = 0
    var year: [CalendarComponent]?
    var month: [CalendarComponent]?
    var day: [CalendarComponent]?
    var hour: [CalendarComponent]?
    var minute: [CalendarComponent]?
    var microsecond: [CalendarComponent]?
    /// `~`: days count back from the end of the month.
    var endOfMonth = false
    var utc = false
    /// -1: unknown; 0 or 1: the specification named the local zone's standard or daylight abbreviation.
    var dst = -1
    /// A tzdata name (`Europe/Berlin`); nil: UTC or the local zone.
    var timeZone: String?

    /// systemd's `calendar_spec_normalize`.
    mutating func normalize() {
        if self.timeZone == "UTC" {
            self.utc = true
            self.timeZone = nil
        }
        if self.weekdays <= 0 || self.weekdays >= Self.weekdayBitsAll { self.weekdays = -1 }
        if self.endOfMonth && self.day == nil { self.endOfMonth = false }
        // Two-digit years: 12 is 2012, 89 is 1989.
        self.year = self.year?.map { component in
            var fixed = component
            for keyPath in [\CalendarComponent.start, \CalendarComponent.stop] {
                if fixed[keyPath: keyPath] >= 0 && fixed[keyPath: keyPath] < 70 { fixed[keyPath: keyPath] += 2000 }
                if fixed[keyPath: keyPath] >= 70 && fixed[keyPath: keyPath] < 100 { fixed[keyPath: keyPath] += 1900 }
            }
            return fixed
        }
        self.year = Self.normalized(self.year)
        self.month = Self.normalized(self.month)
        self.day = Self.normalized(self.day)
        self.hour = Self.normalized(self.hour)
        self.minute = Self.normalized(self.minute)
        self.microsecond = Self.normalized(self.microsecond)
    }

    /// A range's end moved to its last repetition; a repetition that cannot happen twice, or a
    /// range of one value, made a plain value; sorted, duplicates dropped.
    private static func normalized(_ chain: [CalendarComponent]?) -> [CalendarComponent]? {
        guard let chain else { return nil }
        var components = chain.map { component in
            var fixed = component
            if fixed.stop > fixed.start && fixed.repetition > 0 {
                fixed.stop -= (fixed.stop - fixed.start) % fixed.repetition
            }
            if (fixed.stop > fixed.start && fixed.repetition > 0 && fixed.start + fixed.repetition > fixed.stop)
                || fixed.start == fixed.stop
            {
                fixed.repetition = 0
                fixed.stop = -1
            }
            return fixed
        }
        components.sort()
        var unique: [CalendarComponent] = []
        for component in components where unique.last != component { unique.append(component) }
        return unique
    }

    /// systemd's `calendar_spec_valid`; the name of the first field out of range, or nil.
    var invalidField: String? {
        if self.weekdays > Self.weekdayBitsAll { return "weekday" }
        let checks: [(String, [CalendarComponent]?, Int, Int, Bool)] = [
            ("year", self.year, Self.minimumYear, Self.maximumYear, false),
            ("month", self.month, 1, 12, false),
            ("day", self.day, 1, 31, self.endOfMonth),
            ("hour", self.hour, 0, 23, false),
            ("minute", self.minute, 0, 59, false),
            ("second", self.microsecond, 0, 60 * Self.microsecondsPerSecond - 1, false),
        ]
        for (name, chain, from, to, endOfMonth) in checks
        where !Self.isValid(chain, from: from, to: to, endOfMonth: endOfMonth) {
            return name
        }
        return nil
    }

    private static func isValid(_ chain: [CalendarComponent]?, from: Int, to: Int, endOfMonth: Bool) -> Bool {
        guard let chain else { return true }
        var to = to
        for component in chain {
            // Days from the end of the month: at most 28 back for the first value. systemd
            // takes 3 more off for each further value of the list (its check recurses with the
            // bound it lowered), so `*~17,26` is refused while `*~26` is not: kept, as the
            // refusal is systemd's answer.
            if endOfMonth { to -= 3 }
            guard component.start >= from && component.start <= to, component.repetition <= to - from else {
                return false
            }
            if component.stop >= 0 {
                guard component.stop >= from && component.stop <= to,
                    component.start + component.repetition <= component.stop
                else { return false }
            } else if endOfMonth {
                guard component.start - component.repetition >= from else { return false }
            } else {
                guard component.start + component.repetition <= to else { return false }
            }
        }
        return true
    }
}

extension CalendarSpecification {
    /// systemd's normalized form (`calendar_spec_to_string`): `Mon..Fri *-*-* 09:00:00 Europe/Berlin`.
    func formatted(localAbbreviations: (standard: String?, daylight: String?)) -> String {
        var text = ""
        if self.weekdays > 0 && self.weekdays <= Self.weekdayBitsAll {
            text += Self.formattedWeekdays(self.weekdays) + " "
        }
        text += Self.formatted(self.year, width: 4, microseconds: false) + "-"
        text += Self.formatted(self.month, width: 2, microseconds: false) + (self.endOfMonth ? "~" : "-")
        text += Self.formatted(self.day, width: 2, microseconds: false) + " "
        text += Self.formatted(self.hour, width: 2, microseconds: false) + ":"
        text += Self.formatted(self.minute, width: 2, microseconds: false) + ":"
        text += Self.formatted(self.microsecond, width: 2, microseconds: true)
        if self.utc {
            text += " UTC"
        } else if let timeZone = self.timeZone {
            text += " " + timeZone
        } else if self.dst == 0, let name = localAbbreviations.standard, !name.isEmpty {
            text += " " + name
        } else if self.dst == 1, let name = localAbbreviations.daylight, !name.isEmpty {
            text += " " + name
        }
        return text
    }

    private static let weekdayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    private static func formattedWeekdays(_ bits: Int) -> String {
        var text = ""
        var runStart = -1
        func closeRun(before end: Int) {
            if end > runStart + 1 {
                text += (end > runStart + 2 ? ".." : ",") + Self.weekdayNames[end - 1]
            }
        }
        for day in 0..<7 {
            if bits & (1 << day) != 0 {
                if runStart < 0 {
                    if !text.isEmpty { text += "," }
                    text += Self.weekdayNames[day]
                    runStart = day
                }
            } else if runStart >= 0 {
                closeRun(before: day)
                runStart = -1
            }
        }
        if runStart >= 0 { closeRun(before: 7) }
        return text
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// systemd's `format_chain`, one component after another.
    private static func formatted(_ chain: [CalendarComponent]?, width: Int, microseconds: Bool) -> String {
        guard let chain else { return "*" }
        let unit = microseconds ? Self.microsecondsPerSecond : 1
        // Every whole second, written `*`; a range of them (`0..32`, also stepping by one second)
        // is not every second and keeps its bounds (systemd 252 checks `stop < 0` too).
        if microseconds && chain.count == 1 && chain[0].start == 0 && chain[0].stop < 0 && chain[0].repetition == unit {
            return "*"
        }
        return chain.map { component in
            var text = Self.padded(component.start / unit, width)
            if component.start % unit > 0 { text += "." + Self.padded(component.start % unit, 6) }
            if component.stop > 0 { text += ".." + Self.padded(component.stop / unit, width) }
            if component.stop % unit > 0 { text += "." + Self.padded(component.stop % unit, 6) }
            if component.repetition > 0 && !(component.stop > 0 && component.repetition == unit) {
                text += "/" + String(component.repetition / unit)
            }
            if component.repetition % unit > 0 { text += "." + Self.padded(component.repetition % unit, 6) }
            return text
        }.joined(separator: ",")
    }
}
