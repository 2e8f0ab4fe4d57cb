/// The bounds every service checks durations against, in nanoseconds.
package enum TimerLimits {
    /// 2^62 ns, about 146 years: far enough from `Int64`'s ends that no deadline arithmetic on a
    /// validated value overflows.
    package static let maximumNanoseconds: Int64 = 1 << 62
    /// 1 µs: libevent's timeouts are whole microseconds, and a shorter period is a busy loop.
    package static let minimumIntervalNanoseconds: Int64 = 1_000
}

extension TimerService {
    /// The longest delay or interval a service accepts: 2^62 ns, about 146 years. Longer ones
    /// throw instead of wrapping around the clock.
    public static var maximumDuration: Duration { .nanoseconds(TimerLimits.maximumNanoseconds) }

    /// The shortest repeating interval a service accepts: 1 µs. libevent's timeouts are whole
    /// microseconds, and a shorter period is a busy loop, not a timer; shorter intervals throw
    /// ``PreciseTimerError/Code/invalidInterval``.
    public static var minimumInterval: Duration { .nanoseconds(TimerLimits.minimumIntervalNanoseconds) }
}
