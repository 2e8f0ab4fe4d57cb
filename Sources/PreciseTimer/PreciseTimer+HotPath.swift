import PreciseTimerCore

// The calls a daemon makes per request or per session, written on the class itself rather than
// taken from `TimerCoreService`'s extension, which they repeat: the extension is generic and in
// another module, so each call went through a protocol witness, then the unspecialized extension,
// then the `coreReference` witness (about 70 instructions per schedule and cancel). Here a call on
// a `PreciseTimer`, or through `any TimerService`, reaches the core at once.
extension PreciseTimer {
    /// Schedules a timer. See ``/PreciseTimerCore/TimerService/scheduleTimer(_:id:options:_:)``.
    @discardableResult
    public func scheduleTimer(
        _ trigger: TimerTrigger, id: TimerID?, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerHandle {
        guard !self.core.isInherited else { return try Self.refusal(id) }
        return try self.core.schedule(trigger, id: id, options: options, handler)
    }

    /// Cancels a timer. See ``/PreciseTimerCore/TimerService/cancel(_:)-(TimerID)``.
    @discardableResult
    public func cancel(_ id: TimerID) -> Bool {
        !self.core.isInherited && self.core.cancel(id)
    }

    /// Cancels exactly one timer. See ``/PreciseTimerCore/TimerService/cancel(_:)-(TimerHandle)``.
    @discardableResult
    public func cancel(_ handle: TimerHandle) -> Bool {
        !self.core.isInherited && self.core.cancel(handle)
    }
}
