/// A timer request checked against the rules every service keeps: the first deadline and the
/// interval in nanoseconds (interval 0 for a one-shot). Every implementation validates through
/// it, so they throw the same errors for the same input.
package struct TimerRequest: Sendable {
    /// The first deadline, on the service's clock.
    package let deadline: Int64
    /// Nanoseconds between deadlines; 0 for a one-shot or a calendar timer.
    package let interval: Int64
    /// What ties the deadline to the continuous or the wall clock; `nil` on the monotonic clock.
    package let clock: ClockBinding?

    /// A one-shot `delay` after `now`.
    @inline(__always)
    package init(after delay: Duration, now: Int64, id: borrowing TimerID?) throws(PreciseTimerError) {
        self.deadline = try Self.deadline(now: now, after: try delay.validatedDelay(for: id), id: id)
        self.interval = 0
        self.clock = nil
    }

    /// A one-shot at `deadline` (in the past: as soon as possible).
    package init(at deadline: MonotonicInstant, now: Int64, id: borrowing TimerID?) throws(PreciseTimerError) {
        self.deadline = try Self.validated(deadline, now: now, id: copy id)
        self.interval = 0
        self.clock = nil
    }

    /// A repeating timer: first after `delay`, or after one interval when it is `nil`.
    package init(
        every interval: Duration, startingAfter delay: Duration?, now: Int64, id: borrowing TimerID?
    ) throws(PreciseTimerError) {
        self.interval = try interval.validatedInterval(for: id)
        let first = try delay.map { (delay) throws(PreciseTimerError) in try delay.validatedDelay(for: id) }
        self.deadline = try Self.deadline(now: now, after: first ?? self.interval, id: id)
        self.clock = nil
    }

    /// A repeating timer whose grid starts at `start`.
    package init(
        every interval: Duration, startingAt start: MonotonicInstant, now: Int64, id: borrowing TimerID?
    ) throws(PreciseTimerError) {
        self.interval = try interval.validatedInterval(for: id)
        self.deadline = try Self.validated(start, now: now, id: copy id)
        self.clock = nil
    }

    /// Binds the request to the continuous clock: its deadlines count on `CLOCK_BOOTTIME`.
    package func onContinuousClock(_ clocks: ClockBinding.Readings) -> TimerRequest {
        TimerRequest(
            deadline: self.deadline, interval: self.interval,
            clock: ClockBinding(kind: .continuous, anchor: clocks.continuous &- clocks.monotonic))
    }

    /// A one-shot at a wall-clock instant, within ``TimerService/maximumDuration`` of the wall
    /// clock's now either way.
    package init(
        atWallClock instant: WallClockInstant, _ clocks: ClockBinding.Readings, id: borrowing TimerID?
    ) throws(PreciseTimerError) {
        let (distance, overflow) = instant.nanosecondsSinceEpoch.subtractingReportingOverflow(clocks.wall)
        guard !overflow, distance.magnitude <= TimerLimits.maximumNanoseconds.magnitude else {
            throw PreciseTimerError(
                .invalidDelay, id: copy id,
                value: "\(instant) (wall clock now \(WallClockInstant(nanosecondsSinceEpoch: clocks.wall)))")
        }
        self.init(
            deadline: try Self.deadline(now: clocks.monotonic, after: distance, id: id), interval: 0,
            clock: ClockBinding(kind: .wall, anchor: instant.nanosecondsSinceEpoch))
    }

    /// A calendar timer: its first occurrence is the schedule's first after the wall clock's now.
    ///
    /// - Throws: ``PreciseTimerError/Code/invalidSchedule`` when the schedule has no occurrence
    ///   after now, ``PreciseTimerError/Code/invalidDelay`` when it is beyond reach.
    package init(
        on schedule: any WallClockSchedule, _ clocks: ClockBinding.Readings, id: borrowing TimerID?
    ) throws(PreciseTimerError) {
        let now = WallClockInstant(nanosecondsSinceEpoch: clocks.wall)
        guard let first = schedule.next(after: now) else {
            throw PreciseTimerError(
                .invalidSchedule, id: copy id, value: "\(schedule)", detail: "no occurrence after \(now)")
        }
        guard ShardState.Upcoming(after: clocks.wall, next: first.nanosecondsSinceEpoch).isValid else {
            throw PreciseTimerError(
                .invalidSchedule, id: copy id, value: "\(schedule)",
                detail: "asked for the occurrence after \(now), it answered \(first): not after it")
        }
        let oneShot = try TimerRequest(atWallClock: first, clocks, id: id)
        self.init(
            deadline: oneShot.deadline, interval: 0,
            clock: ClockBinding(kind: .wall, anchor: first.nanosecondsSinceEpoch, schedule: schedule))
    }

    private init(deadline: Int64, interval: Int64, clock: ClockBinding?) {
        self.deadline = deadline
        self.interval = interval
        self.clock = clock
    }

    /// `now + nanoseconds`, or ``PreciseTimerError/Code/invalidDelay`` when that is past the
    /// clock's range (a clock near the end of `Int64`, as a test service may start at).
    @inline(__always)
    package static func deadline(now: Int64, after nanoseconds: Int64, id: TimerID?) throws(PreciseTimerError) -> Int64
    {
        let (deadline, overflow) = now.addingReportingOverflow(nanoseconds)
        guard !overflow else { throw Self.pastRange(now: now, after: nanoseconds, id: id) }
        return deadline
    }

    /// The error of a deadline past the clock's range, built out of line.
    @inline(never)
    private static func pastRange(now: Int64, after nanoseconds: Int64, id: TimerID?) -> PreciseTimerError {
        PreciseTimerError(
            .invalidDelay, id: id,
            value:
                "\(Duration.nanoseconds(nanoseconds)) from \(MonotonicInstant(nanoseconds: now)) is past the clock's range"
        )
    }

    /// An absolute deadline within ``TimerService/maximumDuration`` of `now`, either way, so no
    /// later arithmetic on it can overflow.
    package static func validated(
        _ deadline: MonotonicInstant, now: Int64, id: @autoclosure () -> TimerID?
    ) throws(PreciseTimerError) -> Int64 {
        let (distance, overflow) = deadline.nanoseconds.subtractingReportingOverflow(now)
        guard !overflow, distance.magnitude <= TimerLimits.maximumNanoseconds.magnitude else {
            throw PreciseTimerError(
                .invalidDelay, id: id(), value: "\(deadline) (now \(MonotonicInstant(nanoseconds: now)))")
        }
        return deadline.nanoseconds
    }
}
