/// When a timer fires: its first deadline and, for a repeating timer, its period. The one value
/// ``TimerService/scheduleTimer(_:id:options:_:)`` takes for every kind of timer.
///
/// ```swift
/// try timers.scheduleTimer(.after(.seconds(5))) { _ in … }                   // one-shot
/// try timers.scheduleTimer(.every(.milliseconds(10)), id: "tick") { _ in … }  // repeating
/// ```
public struct TimerTrigger: Sendable {
    // Visible to inlined code for ``after(_:)``: a caller that builds its trigger inline knows
    // its kind, so it neither calls a factory nor destroys the trigger through a switch over every
    // kind (about 40 instructions per schedule).
    @usableFromInline
    enum Kind: Sendable {
        case after(Duration)
        case at(MonotonicInstant)
        case every(Duration, startingAfter: Duration?)
        case everyFrom(Duration, start: MonotonicInstant)
        case atWallClock(WallClockInstant)
        // Boxed: an existential inline (five words, copied through its witnesses) made every
        // trigger, the common `.after` included, that size and that cost to copy.
        indirect case on(any WallClockSchedule)
    }
    @usableFromInline
    let kind: Kind

    @usableFromInline
    init(kind: Kind) {
        self.kind = kind
    }

    /// A one-shot `delay` from now; `.zero` fires as soon as possible.
    @inlinable
    public static func after(_ delay: Duration) -> TimerTrigger {
        TimerTrigger(kind: .after(delay))
    }

    /// A one-shot at an absolute deadline; one in the past fires as soon as possible.
    public static func at(_ deadline: MonotonicInstant) -> TimerTrigger {
        TimerTrigger(kind: .at(deadline))
    }

    /// A repeating timer at a fixed rate, first after `delay`, or after one `interval` when it
    /// is `nil`; deadlines are `first + k·interval`.
    public static func every(_ interval: Duration, startingAfter delay: Duration? = nil) -> TimerTrigger {
        TimerTrigger(kind: .every(interval, startingAfter: delay))
    }

    /// A repeating timer whose grid starts at `start`: deadlines are `start + k·interval`.
    public static func every(_ interval: Duration, startingAt start: MonotonicInstant) -> TimerTrigger {
        TimerTrigger(kind: .everyFrom(interval, start: start))
    }

    /// A one-shot when the wall clock (`CLOCK_REALTIME`) reaches `instant`, however it is
    /// stepped meanwhile; one already passed fires as soon as possible.
    public static func atWallClock(_ instant: WallClockInstant) -> TimerTrigger {
        TimerTrigger(kind: .atWallClock(instant))
    }

    /// A repeating timer at every occurrence of a wall-clock schedule (a `CalendarSchedule`, say),
    /// the first being the schedule's first after now.
    public static func on(_ schedule: some WallClockSchedule) -> TimerTrigger {
        TimerTrigger(kind: .on(schedule))
    }

    /// Whether the trigger repeats.
    public var repeats: Bool {
        switch self.kind {
        case .after, .at, .atWallClock: false
        case .every, .everyFrom, .on: true
        }
    }

    /// The request checked against the rules every service keeps, with `driver`'s clocks read at
    /// `now` (its monotonic time); `clock` applies to `after:` and `every:` triggers.
    ///
    /// The common one-shot, ``after(_:)`` on the monotonic clock, is inlined into the caller; every
    /// other trigger goes through one switch out of line.
    @inline(__always)
    package func request(
        now: Int64, clock: TimerOptions.ClockKind, driver: any TimerDriver, id: TimerID?
    ) throws(PreciseTimerError) -> TimerRequest {
        if case .after(let delay) = self.kind, clock != .continuous {
            return try TimerRequest(after: delay, now: now, id: id)
        }
        return try self.anyRequest(now: now, clock: clock, driver: driver, id: id)
    }

    @inline(never)
    private func anyRequest(
        now: Int64, clock: TimerOptions.ClockKind, driver: any TimerDriver, id: TimerID?
    ) throws(PreciseTimerError) -> TimerRequest {
        let request: TimerRequest
        switch self.kind {
        case .after(let delay): request = try TimerRequest(after: delay, now: now, id: id)
        case .every(let interval, let delay):
            request = try TimerRequest(every: interval, startingAfter: delay, now: now, id: id)
        case .at(let deadline): return try TimerRequest(at: deadline, now: now, id: id)
        case .everyFrom(let interval, let start):
            return try TimerRequest(every: interval, startingAt: start, now: now, id: id)
        case .atWallClock(let instant):
            return try TimerRequest(atWallClock: instant, ClockBinding.Readings(driver, monotonic: now), id: id)
        case .on(let schedule):
            return try TimerRequest(on: schedule, ClockBinding.Readings(driver, monotonic: now), id: id)
        }
        guard clock == .continuous else { return request }
        return request.onContinuousClock(ClockBinding.Readings(driver, monotonic: now))
    }
}
