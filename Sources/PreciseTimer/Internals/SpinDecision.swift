/// What the loop does with the time left before the next deadline, as a pure function of that
/// time, the configured spin margin and whether it already spun through one fire in this pass.
///
/// libevent's timeouts are whole microseconds and a wake-up costs an epoll round trip and the
/// kernel's latency, so the last stretch before a deadline is spun through instead of slept.
/// Spinning is bounded so that libevent always gets the loop back between fires: after one
/// spun fire the loop passes through libevent (an alarm at zero) before it spins again, so the
/// doorbell and any other event on the base are served even when the margin covers a period.
package enum SpinDecision: Equatable {
    /// Sleep: arm the alarm this many nanoseconds from now (rounded up to microseconds).
    case sleep(nanoseconds: Int64)
    /// Give the loop back to libevent at once (an alarm at zero), then go on.
    case yield
    /// Spin until the deadline (or until the doorbell rings).
    case spin

    /// Below this, the loop spins rather than re-arms; the alarm is also armed this much early,
    /// which makes up for libevent's rounding to microseconds (up to ~2 µs late otherwise). The
    /// kernel's wake-up latency is far longer, so with no spin margin nothing spins in practice.
    package static let minimumSpin: Int64 = 2_000

    /// - Parameters:
    ///   - remaining: Nanoseconds to the next deadline (may be negative).
    ///   - spinMargin: The configured margin (``PreciseTimer/Configuration/spinMargin``), ≥ 0.
    ///   - alreadySpun: Whether this pass of the loop already spun through a fire.
    package static func decide(remaining: Int64, spinMargin: Int64, alreadySpun: Bool) -> SpinDecision {
        let window = spinMargin + Self.minimumSpin
        if remaining > window { return .sleep(nanoseconds: remaining - window) }
        return alreadySpun ? .yield : .spin
    }
}
