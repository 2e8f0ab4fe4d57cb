/// A point in time on `CLOCK_MONOTONIC`: time since boot, not counting suspend, never set back.
///
/// Every deadline in this package lives on this clock, so `Tick` instants from
/// `PreciseTimer` and from `DispatchReferenceTimer` can be compared with each other and with
/// `DispatchTime.now().uptimeNanoseconds` (the same clock on Linux).
///
/// It is the ``TimerClock``'s `Instant` (`InstantProtocol`, with `Swift.Duration` as its duration
/// type), so it works with `Task.sleep(until:clock:)` and clock-generic code. Arithmetic never
/// traps: ``advanced(by:)`` saturates at the ends of the 64-bit nanosecond range (a service then
/// rejects such a deadline with ``PreciseTimerError/Code/invalidDelay``), and
/// ``duration(to:)`` and `-` are exact for any two instants.
public struct MonotonicInstant: InstantProtocol, Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin (boot).
    public let nanoseconds: Int64

    /// Creates an instant from nanoseconds since the clock's origin.
    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// Reads the clock (`clock_gettime(CLOCK_MONOTONIC)`, a vDSO call: no system call).
    public static func now() -> MonotonicInstant {
        MonotonicInstant(nanoseconds: monotonicNanoseconds())
    }

    /// The time from `rhs` to `lhs`; negative when `lhs` is earlier. Exact for any two instants
    /// (the difference may not fit in 64-bit nanoseconds, but it always fits in a `Duration`).
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        // Split into seconds and nanoseconds so that neither part can overflow.
        let seconds = lhs.nanoseconds / 1_000_000_000 - rhs.nanoseconds / 1_000_000_000
        let nanoseconds = lhs.nanoseconds % 1_000_000_000 - rhs.nanoseconds % 1_000_000_000
        return .seconds(seconds) + .nanoseconds(nanoseconds)
    }

    /// The instant `duration` after this one (before it when `duration` is negative).
    ///
    /// Sub-nanosecond parts round up, towards the future, so a deadline made this way is never
    /// early. Saturates at `Int64.min` / `Int64.max` nanoseconds instead of trapping; no service
    /// accepts a deadline that far away, so scheduling at it throws
    /// ``PreciseTimerError/Code/invalidDelay``.
    public func advanced(by duration: Duration) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: Self.saturatingAdd(self.nanoseconds, Self.nanosecondsRoundedUp(duration)))
    }

    /// The time from this instant to `other`: `other - self` (negative when `other` is earlier).
    public func duration(to other: MonotonicInstant) -> Duration {
        other - self
    }

    /// Orders instants by time.
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// Seconds since boot with nanosecond digits, e.g. `"12345.000000042s"`; a negative instant
    /// (before the clock's origin, as a test service may use) prints with a minus sign, e.g.
    /// `"-0.000000001s"`. Never traps, `Int64.min` included.
    public var description: String {
        // The magnitude as unsigned, so that `Int64.min` has one too.
        let magnitude = self.nanoseconds.magnitude
        let fraction = String(magnitude % 1_000_000_000)
        let sign = self.nanoseconds < 0 ? "-" : ""
        return "\(sign)\(magnitude / 1_000_000_000).\(String(repeating: "0", count: 9 - fraction.count))\(fraction)s"
    }

    /// `duration` in whole nanoseconds, rounded towards the future, saturating at the ends of
    /// `Int64`.
    private static func nanosecondsRoundedUp(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components  // both parts carry the sign
        var nanoseconds = attoseconds / 1_000_000_000
        if attoseconds % 1_000_000_000 > 0 { nanoseconds += 1 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return Self.saturatingAdd(whole, nanoseconds)
    }

    private static func saturatingAdd(_ lhs: Int64, _ rhs: Int64) -> Int64 {
        let (sum, overflow) = lhs.addingReportingOverflow(rhs)
        guard overflow else { return sum }
        return rhs < 0 ? .min : .max
    }
}
