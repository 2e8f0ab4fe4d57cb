// The scheduling calls, each written once on the one requirement that registers a timer and
// returns its identity (`scheduleTimer`). They return the ID only; keep the ``TimerHandle`` from
// `scheduleTimer` when a later cancel must never reach a newer timer that reused an explicit ID.

extension TimerService {
    /// Schedules a one-shot timer: it fires once after `delay`, then its ID is removed
    /// automatically (one-shot auto-cancel), so the handler may reuse it.
    ///
    /// - Parameters:
    ///   - id: The timer's name, or `nil` for a generated one that is never reused.
    ///   - delay: Time from now to the deadline; `.zero` fires as soon as possible.
    ///   - options: Executor (and missed-tick policy, ignored for one-shots).
    ///   - handler: Called once with the ``Tick``.
    /// - Returns: The timer's ID.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidDelay``,
    ///   ``PreciseTimerError/Code/emptyID``, ``PreciseTimerError/Code/reservedID``, ``PreciseTimerError/Code/duplicateID`` or
    ///   ``PreciseTimerError/Code/shutDown``; nothing is registered then.
    @discardableResult
    public func schedule(
        id: TimerID? = nil, after delay: Duration, options: TimerOptions = .init(),
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleTimer(.after(delay), id: id, options: options, handler).id
    }

    /// Schedules a one-shot timer at an absolute deadline. A deadline in the past fires as soon
    /// as possible (its ``Tick/scheduledAt`` is still `deadline`, so ``Tick/lateness`` says how
    /// far in the past it was).
    ///
    /// - Throws: ``PreciseTimerError/Code/invalidDelay`` when `deadline` is more than
    ///   ``TimerService/maximumDuration`` from now, and the errors of
    ///   ``TimerService/schedule(id:after:options:_:)``.
    @discardableResult
    public func schedule(
        id: TimerID? = nil, at deadline: MonotonicInstant, options: TimerOptions = .init(),
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleTimer(.at(deadline), id: id, options: options, handler).id
    }

    /// Schedules a repeating timer at a fixed rate: deadlines are `start + k·interval`, so it
    /// does not drift; late fires are handled by `options.missedTicks`.
    ///
    /// - Parameters:
    ///   - id: The timer's name, or `nil` for a generated one that is never reused.
    ///   - interval: The period; at least ``TimerService/minimumInterval``.
    ///   - delay: Time to the first fire, or `nil` for one interval.
    ///   - options: Executor and missed-tick policy.
    ///   - handler: Called at every fire until the timer is cancelled.
    /// - Returns: The timer's ID.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidInterval``,
    ///   ``PreciseTimerError/Code/invalidDelay``, ``PreciseTimerError/Code/emptyID``,
    ///   ``PreciseTimerError/Code/duplicateID`` or ``PreciseTimerError/Code/shutDown``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID? = nil, every interval: Duration, startingAfter delay: Duration? = nil,
        options: TimerOptions = .init(),
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleTimer(.every(interval, startingAfter: delay), id: id, options: options, handler).id
    }

    /// Schedules a repeating timer whose grid starts at an absolute instant: deadlines are
    /// `start + k·interval`. A `start` in the past anchors the grid there: the first call comes
    /// as soon as possible and, under ``MissedTickPolicy/skip``, reports the periods already
    /// passed in ``Tick/missed``.
    ///
    /// - Throws: as ``TimerService/scheduleRepeating(id:every:startingAfter:options:_:)``;
    ///   ``PreciseTimerError/Code/invalidDelay`` when `start` is more than
    ///   ``TimerService/maximumDuration`` from now.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID? = nil, every interval: Duration, startingAt start: MonotonicInstant,
        options: TimerOptions = .init(),
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleTimer(.every(interval, startingAt: start), id: id, options: options, handler).id
    }

    /// ``scheduleTimer(_:id:options:_:)`` with default ``TimerOptions``.
    @discardableResult
    public func scheduleTimer(
        _ trigger: TimerTrigger, id: TimerID? = nil, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerHandle {
        try self.scheduleTimer(trigger, id: id, options: TimerOptions(), handler)
    }

    /// Schedules a one-shot timer that fires when the wall clock (``wallClockNow``) reaches
    /// `instant`, however the clock is stepped meanwhile: stepped past it, the timer fires at
    /// once; stepped back, it waits. An instant already passed fires as soon as possible
    /// (``Tick/wallClockDeadline`` is `instant`, ``Tick/lateness`` says how far in the past).
    /// A deadline passed while the machine was suspended fires at resume.
    ///
    /// ```swift
    /// try timers.schedule(atWallClock: rotation) { _ in rotateKeys() }
    /// ```
    ///
    /// - Parameters:
    ///   - id: The timer's name, or `nil` for a generated one.
    ///   - instant: When to fire, on the wall clock.
    ///   - options: Executor (``TimerOptions/clock`` does not apply: the wall clock is the clock).
    ///   - handler: Called once.
    /// - Returns: The timer's ID.
    /// - Throws: ``PreciseTimerError/Code/invalidDelay`` when `instant` is more than
    ///   ``TimerService/maximumDuration`` from the wall clock's now, and the errors of
    ///   ``TimerService/scheduleTimer(_:id:options:_:)``.
    @discardableResult
    public func schedule(
        id: TimerID? = nil, atWallClock instant: WallClockInstant, options: TimerOptions = .init(),
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleTimer(.atWallClock(instant), id: id, options: options, handler).id
    }

    /// Schedules a repeating timer at every occurrence of a wall-clock schedule, such as a
    /// `CalendarSchedule` ("daily at 03:00 Europe/Berlin"); the first is the schedule's first
    /// occurrence after ``wallClockNow``.
    ///
    /// Occurrences that pass while the handler runs late, while the machine is suspended or when
    /// the clock is stepped forward follow `options.missedTicks`: ``MissedTickPolicy/skip`` and
    /// ``MissedTickPolicy/delay`` make one call for the latest, with ``Tick/missed`` counting the
    /// others; ``MissedTickPolicy/burst`` makes one call each, at most
    /// ``MissedTickPolicy/maximumBurst`` in a row; the latest and the count come from one
    /// ``WallClockSchedule/occurrences(after:notAfter:)``, however far the clock moved. An
    /// occurrence never fires twice, even when the clock is stepped back over it; stepped back
    /// past the occurrence before the last one fired (the clock was wrong by more than a
    /// period), the schedule starts afresh from the new time. ``TimerService/reschedule(_:after:)``
    /// moves the next call, which answers no occurrence (``Tick/wallClockDeadline`` `nil`);
    /// ``TimerService/resume(_:)`` goes on with the first occurrence after the resume. The timer
    /// ends (and releases its handler) when the schedule has no occurrence left, or answers one
    /// that is not ``TimerService/minimumInterval`` after the instant it was asked about (logged
    /// as ``PreciseTimerError/Code/invalidSchedule``, never a hot loop).
    ///
    /// The schedule is asked outside every lock of the service (on the caller's thread here, on
    /// the loop thread later): it may call the service, even about its own timer.
    ///
    /// - Returns: The timer's ID.
    /// - Throws: ``PreciseTimerError/Code/invalidSchedule`` when the schedule has no occurrence
    ///   after now or its first is not after now, and the errors of
    ///   ``TimerService/scheduleTimer(_:id:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID? = nil, on schedule: some WallClockSchedule, options: TimerOptions = .init(),
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleTimer(.on(schedule), id: id, options: options, handler).id
    }
}
