/// A point in time on `CLOCK_MONOTONIC`: time since boot, not counting suspend, never set back.
///
/// Every deadline in this package lives on this clock, so `Tick` instants from
/// ``PreciseTimer`` and from `DispatchReferenceTimer` can be compared with each other and with
/// `DispatchTime.now().uptimeNanoseconds` (the same clock on Linux).
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
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

    /// The time from `rhs` to `lhs`; negative when `lhs` is earlier.
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        .nanoseconds(lhs.nanoseconds - rhs.nanoseconds)
    }

    /// Orders instants by time.
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// Seconds since boot with nanosecond digits, e.g. `"12345.000000042s"`.
    public var description: String {
        let seconds = self.nanoseconds / 1_000_000_000
        let fraction = String(self.nanoseconds % 1_000_000_000)
        return "\(seconds).\(String(repeating: "0", count: 9 - fraction.count))\(fraction)s"
    }
}
