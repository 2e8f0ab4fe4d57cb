/// A point in time on the wall clock (`CLOCK_REALTIME`): nanoseconds since the Unix epoch, UTC.
///
/// The wall clock is the one daemons live by ("at 03:00"), and it can be stepped (by NTP or
/// `settimeofday`) and keeps running while the machine sleeps, unlike ``MonotonicInstant``. Timers
/// at wall-clock instants fire when the wall clock reaches them, however it is stepped meanwhile
/// (see ``TimerService/schedule(id:atWallClock:options:_:)``).
///
/// Arithmetic never traps: ``advanced(by:)`` saturates at the ends of the 64-bit nanosecond range
/// (a service rejects such an instant with ``PreciseTimerError/Code/invalidDelay``).
public struct WallClockInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since 1970-01-01 00:00:00 UTC (negative before it).
    public let nanosecondsSinceEpoch: Int64

    /// Creates an instant from nanoseconds since the Unix epoch.
    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    /// The instant `duration` after this one (before it when `duration` is negative); sub-
    /// nanosecond parts round up, and the result saturates at the ends of `Int64` nanoseconds.
    public func advanced(by duration: Duration) -> WallClockInstant {
        let (seconds, attoseconds) = duration.components
        var nanoseconds = attoseconds / 1_000_000_000
        if attoseconds % 1_000_000_000 > 0 { nanoseconds += 1 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else {
            return WallClockInstant(nanosecondsSinceEpoch: seconds < 0 ? .min : .max)
        }
        return WallClockInstant(
            nanosecondsSinceEpoch: Self.saturatingAdd(
                self.nanosecondsSinceEpoch, Self.saturatingAdd(whole, nanoseconds)))
    }

    /// `other − self`: negative when `other` is earlier. Exact for any two instants.
    public func duration(to other: WallClockInstant) -> Duration {
        let seconds = other.nanosecondsSinceEpoch / 1_000_000_000 - self.nanosecondsSinceEpoch / 1_000_000_000
        let nanoseconds = other.nanosecondsSinceEpoch % 1_000_000_000 - self.nanosecondsSinceEpoch % 1_000_000_000
        return .seconds(seconds) + .nanoseconds(nanoseconds)
    }

    /// Orders instants by time.
    public static func < (lhs: WallClockInstant, rhs: WallClockInstant) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }

    /// ISO 8601 in UTC with nanoseconds, e.g. `2026-03-29T01:30:00.000000000Z`; correct for any
    /// `Int64` value, before the epoch included.
    public var description: String {
        // Floor division, so that instants before the epoch count back from the day's start.
        let (seconds, nanosecond) = Self.floorDivide(self.nanosecondsSinceEpoch, 1_000_000_000)
        let (days, secondOfDay) = Self.floorDivide(seconds, 86_400)
        let (year, month, day) = CivilDate.from(daysSinceEpoch: days)
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let yearText = year < 0 ? "-" + padded(-year, 4) : padded(year, 4)
        return "\(yearText)-\(padded(month, 2))-\(padded(day, 2))T\(padded(secondOfDay / 3600, 2)):"
            + "\(padded(secondOfDay / 60 % 60, 2)):\(padded(secondOfDay % 60, 2)).\(padded(nanosecond, 9))Z"
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    private static func saturatingAdd(_ lhs: Int64, _ rhs: Int64) -> Int64 {
        let (sum, overflow) = lhs.addingReportingOverflow(rhs)
        guard overflow else { return sum }
        return rhs < 0 ? .min : .max
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `civil_from_days`),
/// exact for every day an `Int64` of nanoseconds can reach.
package enum CivilDate {
    package static func from(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
