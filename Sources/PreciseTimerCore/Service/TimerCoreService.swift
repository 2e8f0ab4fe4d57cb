/// The one implementation of ``TimerService`` that every service of this package shares: each
/// requirement forwards to the service's ``TimerCore``, and each engine adds only how it stops.
///
/// Fork-inertness lives here, so every engine gets it: in a child created with `fork()` the
/// engine's thread or queue does not exist and a registry semaphore may have been copied while
/// held, so an inherited service touches none of it. Every call that schedules throws
/// ``PreciseTimerError/Code/shutDown``, the others return `false`, `nil`, `0` or nothing, and
/// ``TimerService/shutdown()`` returns at once.
package protocol TimerCoreService: TimerUnitHost {
    /// The registry and scheduling logic the service runs.
    var core: TimerCore { get }
    /// Stops the engine once the core is closed (the first ``TimerService/shutdown()`` and every
    /// later one call it): wait for what drives the core to let go of it, where the engine can.
    func stopEngine()
}

extension TimerCoreService {
    /// The current time on the service's clock.
    public var now: MonotonicInstant { self.core.now }

    /// The wall clock's current time. See ``TimerService/wallClockNow``.
    public var wallClockNow: WallClockInstant { self.core.wallClockNow }

    /// Schedules a timer. See ``TimerService/scheduleTimer(_:id:options:_:)``.
    @discardableResult
    public func scheduleTimer(
        _ trigger: TimerTrigger, id: TimerID?, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerHandle {
        try self.refuseIfInherited(id)
        return try self.core.schedule(trigger, id: id, options: options, handler)
    }

    /// Moves a timer's next deadline. See ``TimerService/reschedule(_:after:)``.
    @discardableResult
    public func reschedule(_ id: TimerID, after delay: Duration) throws -> Bool {
        guard !self.core.isInherited else { return false }
        return try self.core.reschedule(id, after: delay)
    }

    /// Moves a timer's next deadline. See ``TimerService/reschedule(_:at:)``.
    @discardableResult
    public func reschedule(_ id: TimerID, at deadline: MonotonicInstant) throws -> Bool {
        guard !self.core.isInherited else { return false }
        return try self.core.reschedule(id, at: deadline)
    }

    /// Moves or creates an idle timeout. See ``TimerService/scheduleOrReschedule(id:after:options:_:)``.
    @discardableResult
    public func scheduleOrReschedule(
        id: TimerID, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Bool {
        try self.refuseIfInherited(id)
        return try self.core.scheduleOrReschedule(id: id, after: delay, options: options, handler)
    }

    /// The next deadline of a timer. See ``TimerService/deadline(of:)``.
    public func deadline(of id: TimerID) -> MonotonicInstant? {
        guard !self.core.isInherited else { return nil }
        return self.core.deadline(of: id)
    }

    /// The next occurrence on the wall clock. See ``TimerService/wallClockDeadline(of:)``.
    public func wallClockDeadline(of id: TimerID) -> WallClockInstant? {
        guard !self.core.isInherited else { return nil }
        return self.core.wallClockDeadline(of: id)
    }

    /// Pauses a timer. See ``TimerService/pause(_:)``.
    @discardableResult
    public func pause(_ id: TimerID) -> Bool {
        guard !self.core.isInherited else { return false }
        return self.core.pause(id)
    }

    /// Resumes a paused timer. See ``TimerService/resume(_:)``.
    @discardableResult
    public func resume(_ id: TimerID) -> Bool {
        guard !self.core.isInherited else { return false }
        return self.core.resume(id)
    }

    /// Whether the timer is paused. See ``TimerService/isPaused(_:)``.
    public func isPaused(_ id: TimerID) -> Bool {
        guard !self.core.isInherited else { return false }
        return self.core.isPaused(id)
    }

    /// Cancels a timer. See ``TimerService/cancel(_:)-(TimerID)``.
    @discardableResult
    public func cancel(_ id: TimerID) -> Bool {
        guard !self.core.isInherited else { return false }
        return self.core.cancel(id)
    }

    /// Cancels exactly one timer. See ``TimerService/cancel(_:)-(TimerHandle)``.
    @discardableResult
    public func cancel(_ handle: TimerHandle) -> Bool {
        guard !self.core.isInherited else { return false }
        return self.core.cancel(handle.id, generation: handle.generation)
    }

    /// The generation of the timer under `id`. See ``TimerService/generation(of:)``.
    @available(*, deprecated, message: "Keep the TimerHandle that scheduleTimer returns (or a tick's handle)")
    public func generation(of id: TimerID) -> UInt64? {
        guard !self.core.isInherited else { return nil }
        return self.core.generation(of: id)
    }

    /// Cancels every timer. See ``TimerService/cancelAll()``.
    public func cancelAll() {
        guard !self.core.isInherited else { return }
        self.core.cancelAll()
    }

    /// Whether a timer with this ID is scheduled. See ``TimerService/isScheduled(_:)``.
    public func isScheduled(_ id: TimerID) -> Bool {
        guard !self.core.isInherited else { return false }
        return self.core.isScheduled(id)
    }

    /// The IDs of all scheduled timers, in no particular order. See ``TimerService/scheduledIDs``.
    public var scheduledIDs: [TimerID] {
        guard !self.core.isInherited else { return [] }
        return self.core.scheduledIDs
    }

    /// The number of scheduled timers. See ``TimerService/scheduledCount``.
    public var scheduledCount: Int {
        guard !self.core.isInherited else { return 0 }
        return self.core.scheduledCount
    }

    /// Cancels everything, releases every handler and stops the engine. See
    /// ``TimerService/shutdown()``; each service's documentation says what its engine waits for.
    public func shutdown() {
        guard !self.core.isInherited else { return }
        self.core.close(.shutDown)
        self.stopEngine()
    }

    /// A forked child's service schedules nothing (see ``TimerCoreService``).
    private func refuseIfInherited(_ id: TimerID?) throws(PreciseTimerError) {
        guard !self.core.isInherited else {
            throw PreciseTimerError(.shutDown, id: id, value: "a service inherited through fork()")
        }
    }
}
