// The calls with parameters left out. Each overload here leaves out at least one parameter of
// the requirement it forwards to, so none has a requirement's exact signature: were one to match,
// it would silently become that requirement's default implementation, and a conformer that
// forgot the requirement would compile and recurse forever.

extension TimerService {
    /// Schedules a one-shot timer with default ``TimerOptions``; see
    /// ``TimerService/schedule(id:after:options:_:)``.
    @discardableResult
    public func schedule(
        id: TimerID? = nil, after delay: Duration, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.schedule(id: id, after: delay, options: TimerOptions(), handler)
    }

    /// Schedules a one-shot timer with a generated ID; see
    /// ``TimerService/schedule(id:after:options:_:)``.
    @discardableResult
    public func schedule(
        after delay: Duration, options: TimerOptions, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.schedule(id: nil, after: delay, options: options, handler)
    }

    /// Schedules a one-shot timer at an absolute deadline with default ``TimerOptions``; see
    /// ``TimerService/schedule(id:at:options:_:)``.
    @discardableResult
    public func schedule(
        id: TimerID? = nil, at deadline: MonotonicInstant, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.schedule(id: id, at: deadline, options: TimerOptions(), handler)
    }

    /// Schedules a one-shot timer at an absolute deadline with a generated ID; see
    /// ``TimerService/schedule(id:at:options:_:)``.
    @discardableResult
    public func schedule(
        at deadline: MonotonicInstant, options: TimerOptions, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.schedule(id: nil, at: deadline, options: options, handler)
    }

    /// Schedules a repeating timer with default ``TimerOptions``; see
    /// ``TimerService/scheduleRepeating(id:every:startingAfter:options:_:)``. The first fire
    /// comes after one interval unless `startingAfter` says otherwise.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID? = nil, every interval: Duration, startingAfter delay: Duration? = nil,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleRepeating(id: id, every: interval, startingAfter: delay, options: TimerOptions(), handler)
    }

    /// Schedules a repeating timer whose first fire comes after one interval; see
    /// ``TimerService/scheduleRepeating(id:every:startingAfter:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID? = nil, every interval: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleRepeating(id: id, every: interval, startingAfter: nil, options: options, handler)
    }

    /// Schedules a repeating timer with a generated ID; see
    /// ``TimerService/scheduleRepeating(id:every:startingAfter:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        every interval: Duration, startingAfter delay: Duration?, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleRepeating(id: nil, every: interval, startingAfter: delay, options: options, handler)
    }

    /// Schedules a repeating timer from an absolute start with default ``TimerOptions``; see
    /// ``TimerService/scheduleRepeating(id:every:startingAt:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID? = nil, every interval: Duration, startingAt start: MonotonicInstant,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleRepeating(id: id, every: interval, startingAt: start, options: TimerOptions(), handler)
    }

    /// Schedules a repeating timer from an absolute start with a generated ID; see
    /// ``TimerService/scheduleRepeating(id:every:startingAt:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        every interval: Duration, startingAt start: MonotonicInstant, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleRepeating(id: nil, every: interval, startingAt: start, options: options, handler)
    }

    /// Cancels exactly the timer that produced `tick`: a later timer that reused its explicit ID
    /// is left alone. See ``TimerService/cancel(_:generation:)``.
    @discardableResult
    public func cancel(_ tick: Tick) -> Bool {
        self.cancel(tick.id, generation: tick.generation)
    }

    /// ``TimerService/scheduleOrReschedule(id:after:options:_:)`` with default ``TimerOptions``.
    @discardableResult
    public func scheduleOrReschedule(
        id: TimerID, after delay: Duration, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Bool {
        try self.scheduleOrReschedule(id: id, after: delay, options: TimerOptions(), handler)
    }
}
