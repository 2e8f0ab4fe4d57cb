// The calls with parameters left out, for the requirements (a requirement cannot declare default
// arguments). Each overload here leaves out at least one parameter of the requirement it forwards
// to, so none has a requirement's exact signature: were one to match, it would silently become
// that requirement's default implementation, and a conformer that forgot the requirement would
// compile and recurse forever. The scheduling calls written on the protocol declare their
// defaults themselves (`id: nil`, `options: .init()`), so they need no overloads here.

extension TimerService {
    /// ``TimerService/scheduleOrReschedule(id:after:options:_:)`` with default ``TimerOptions``.
    @discardableResult
    public func scheduleOrReschedule(
        id: TimerID, after delay: Duration, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Bool {
        try self.scheduleOrReschedule(id: id, after: delay, options: TimerOptions(), handler)
    }
}

// MARK: Deprecated: one spelling per idea (kept compiling until 2.0)

extension TimerService {
    /// Cancels the timer with this ID only if it is the one scheduled as `generation`.
    @available(*, deprecated, renamed: "cancel(_:)", message: "Cancel by TimerHandle(id:generation:)")
    @discardableResult
    public func cancel(_ id: TimerID, generation: UInt64) -> Bool {
        self.cancel(TimerHandle(id: id, generation: generation))
    }

    /// Cancels exactly the timer that produced `tick`.
    @available(*, deprecated, message: "Use cancel(tick.handle)")
    @discardableResult
    public func cancel(_ tick: Tick) -> Bool {
        self.cancel(tick.handle)
    }
}

// MARK: Requirements added after their protocol (defaults keep older conformers compiling)

extension TimerService {
    /// `nil`: a service that does not track wall-clock deadlines.
    public func wallClockDeadline(of id: TimerID) -> WallClockInstant? { nil }
}
