/// A timer request checked against the rules every service keeps: the first deadline and the
/// interval in nanoseconds (interval 0 for a one-shot). Every implementation validates through
/// it, so they throw the same errors for the same input.
package struct TimerRequest: Sendable {
    /// The first deadline, on the service's clock.
    package let deadline: Int64
    /// Nanoseconds between deadlines; 0 for a one-shot.
    package let interval: Int64

    /// A one-shot `delay` after `now`.
    package init(after delay: Duration, now: Int64, id: TimerID?) throws(PreciseTimerError) {
        self.deadline = now + (try delay.validatedDelay(for: id))
        self.interval = 0
    }

    /// A one-shot at `deadline` (in the past: as soon as possible).
    package init(at deadline: MonotonicInstant, now: Int64, id: TimerID?) throws(PreciseTimerError) {
        self.deadline = try Self.validated(deadline, now: now, id: id)
        self.interval = 0
    }

    /// A repeating timer: first after `delay`, or after one interval when it is `nil`.
    package init(
        every interval: Duration, startingAfter delay: Duration?, now: Int64, id: TimerID?
    ) throws(PreciseTimerError) {
        self.interval = try interval.validatedInterval(for: id)
        let first = try delay.map { (delay) throws(PreciseTimerError) in try delay.validatedDelay(for: id) }
        self.deadline = now + (first ?? self.interval)
    }

    /// A repeating timer whose grid starts at `start`.
    package init(
        every interval: Duration, startingAt start: MonotonicInstant, now: Int64, id: TimerID?
    ) throws(PreciseTimerError) {
        self.interval = try interval.validatedInterval(for: id)
        self.deadline = try Self.validated(start, now: now, id: id)
    }

    /// An absolute deadline within ``TimerService/maximumDuration`` of `now`, either way, so no
    /// later arithmetic on it can overflow.
    package static func validated(
        _ deadline: MonotonicInstant, now: Int64, id: TimerID?
    ) throws(PreciseTimerError) -> Int64 {
        let (distance, overflow) = deadline.nanoseconds.subtractingReportingOverflow(now)
        guard !overflow, distance.magnitude <= TimerLimits.maximumNanoseconds.magnitude else {
            throw PreciseTimerError(
                .invalidDelay, id: id, value: "\(deadline) (now \(MonotonicInstant(nanoseconds: now)))")
        }
        return deadline.nanoseconds
    }
}
