import PreciseTimerCore

// The calls a daemon makes per request or per session, written on the class itself rather than
// taken from `TimerCoreService`'s extension, which they repeat: the extension is generic and in
// another module, so a call would go through a protocol witness, the unspecialized extension and
// the `coreReference` witness. They are inlinable, so a call on a `PreciseTimer` is a call of the
// core's entry in the caller's own code (the core checks for a fork there), its arguments moved
// once. Through `any TimerService` a call takes the witness, then the same entry.
extension PreciseTimer {
    /// Schedules a timer. See ``/PreciseTimerCore/TimerService/scheduleTimer(_:id:options:_:)``.
    @inlinable @discardableResult
    public func scheduleTimer(
        _ trigger: TimerTrigger, id: TimerID?, options: TimerOptions,
        _ handler: consuming @escaping @Sendable (Tick) -> Void
    ) throws -> TimerHandle {
        try self.core.schedule(trigger, id: id, options: options, handler)
    }

    /// Cancels a timer. See ``/PreciseTimerCore/TimerService/cancel(_:)-(TimerID)``.
    @inlinable @discardableResult
    public func cancel(_ id: TimerID) -> Bool {
        self.core.cancelUnlessInherited(id)
    }

    /// Cancels exactly one timer. See ``/PreciseTimerCore/TimerService/cancel(_:)-(TimerHandle)``.
    @inlinable @discardableResult
    public func cancel(_ handle: TimerHandle) -> Bool {
        self.core.cancelUnlessInherited(handle)
    }
}
