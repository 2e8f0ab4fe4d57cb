import PreciseTimerCore

/// Calendar arithmetic on the proleptic Gregorian calendar, in plain integers (no time zone).
///
/// Howard Hinnant's `days_from_civil` / `civil_from_days`, exact for every year an `Int` holds.
enum CivilTime {
    static let secondsPerDay = 86_400

    /// Days since 1970-01-01 of `year`-`month`-`day` (`month` 1...12; `day` may be out of the
    /// month's range: it counts on from the month's first day).
    @inline(__always)
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468 + day - 1
    }

    /// The date of a day counted from 1970-01-01 (`month` 1...12): the core's `civil_from_days`.
    static func date(days: Int) -> (year: Int, month: Int, day: Int) {
        let date = CivilDate.from(daysSinceEpoch: Int64(days))
        return (Int(date.year), Int(date.month), Int(date.day))
    }

    @inline(__always)
    static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    @inline(__always)
    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return self.isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Floor division and its non-negative remainder.
    @inline(__always)
    static func floorDivide(_ value: Int, _ divisor: Int) -> (quotient: Int, remainder: Int) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }
}

/// A broken-down local time, C's `struct tm` in the shape systemd's calendar code walks it:
/// fields may be out of range until ``LocalTimeConverter/makeTime(_:)`` normalizes them.
struct BrokenDownTime {
    /// The full year (C's `tm_year + 1900`).
    var year: Int
    /// 0...11 once normalized (C's `tm_mon`).
    var month: Int
    /// 1...31 once normalized (C's `tm_mday`).
    var day: Int
    var hour: Int
    var minute: Int
    var second: Int
    /// -1: unknown (let the zone decide), 0: standard time, 1: daylight saving time.
    var isDST: Int
    /// 0 = Sunday; set by a conversion, ignored by ``LocalTimeConverter/makeTime(_:)``.
    var weekday: Int = 0

    /// The fields of `localSeconds` (seconds since the epoch on a clock that reads local time).
    init(localSeconds: Int, isDST: Bool) {
        let (days, secondOfDay) = CivilTime.floorDivide(localSeconds, CivilTime.secondsPerDay)
        let date = CivilTime.date(days: days)
        self.year = date.year
        self.month = date.month - 1
        self.day = date.day
        self.hour = secondOfDay / 3600
        self.minute = secondOfDay / 60 % 60
        self.second = secondOfDay % 60
        self.isDST = isDST ? 1 : 0
        self.weekday = CivilTime.floorDivide(days + 4, 7).remainder
    }

    /// Whether every field is in its range (so normalizing changes none of them).
    var isInRange: Bool {
        self.month >= 0 && self.month < 12 && self.day >= 1
            && (self.day <= 28 || self.day <= CivilTime.daysInMonth(year: self.year, month: self.month + 1))
            && self.hour >= 0 && self.hour < 24 && self.minute >= 0 && self.minute < 60
            && self.second >= 0 && self.second < 60
    }

    /// `localSeconds` normalized into fields: the same fields when they are in range (the
    /// common case, which skips the division-heavy date conversion), else carried.
    func normalized(localSeconds: Int, isDST: Bool) -> BrokenDownTime {
        guard self.isInRange else { return BrokenDownTime(localSeconds: localSeconds, isDST: isDST) }
        var copy = self
        copy.isDST = isDST ? 1 : 0
        let days = CivilTime.floorDivide(localSeconds, CivilTime.secondsPerDay).quotient
        copy.weekday = CivilTime.floorDivide(days + 4, 7).remainder
        return copy
    }

    /// Seconds since the epoch on a clock that reads these fields, out-of-range fields carried
    /// as C's `mktime` carries them (a 13th month is next January, day 0 the last of the month
    /// before, hour 24 the next day). `second` is taken as given.
    var localSeconds: Int {
        let (carry, month) = CivilTime.floorDivide(self.month, 12)
        let days = CivilTime.days(year: self.year + carry, month: month + 1, day: self.day)
        return days * CivilTime.secondsPerDay + self.hour * 3600 + self.minute * 60 + self.second
    }
}
