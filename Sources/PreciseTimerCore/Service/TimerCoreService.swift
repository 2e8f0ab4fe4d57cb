/// The one implementation of ``TimerService`` that every service of this package shares: each
/// requirement forwards to the service's ``TimerCore``, and each engine adds only how it stops.
/// `PreciseTimer` writes the three calls a daemon makes per request (`scheduleTimer`, both
/// `cancel`s) on the class itself, inlinable, so that they reach the core without this generic
/// extension's hops.
///
/// Fork-inertness lives here and in those three calls' entries into the core, so every engine
/// gets it: in a child created with `fork()` the engine's thread or queue does not exist and a
/// registry semaphore may have been copied while held, so an inherited service touches none of
/// it. Every call that schedules throws ``PreciseTimerError/Code/shutDown``, the others return
/// `false`, `nil`, `0` or nothing, and ``TimerService/shutdown()`` returns at once. The core's
/// `schedule` and `cancelUnlessInherited` check for themselves (the inlinable calls reach
/// nothing else); every other call checks in `withCore(otherwise:_:)`.
package protocol TimerCoreService: TimerUnitHost {
    /// The registry and scheduling logic the service runs.
    var core: TimerCore { get }
    /// ``core``, unretained: the service holds it for its whole life, so a call borrows it
    /// instead of taking a reference (see ``withCore(otherwise:_:)``). Each conformer returns
    /// `.passUnretained(self.core)`.
    var coreReference: Unmanaged<TimerCore> { get }
    /// Stops the engine once the core is closed (the first ``TimerService/shutdown()`` and every
    /// later one call it): wait for what drives the core to let go of it, where the engine can.
    func stopEngine()
}

extension TimerCoreService {
    /// The current time on the service's clock.
    public var now: MonotonicInstant { self.coreReference._withUnsafeGuaranteedRef { $0.now } }

    /// The wall clock's current time. See ``TimerService/wallClockNow``.
    public var wallClockNow: WallClockInstant { self.coreReference._withUnsafeGuaranteedRef { $0.wallClockNow } }

    /// Schedules a timer. See ``TimerService/scheduleTimer(_:id:options:_:)``.
    @discardableResult
    public func scheduleTimer(
        _ trigger: TimerTrigger, id: TimerID?, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerHandle {
        // The core refuses in a forked child itself.
        try self.coreReference._withUnsafeGuaranteedRef { try $0.schedule(trigger, id: id, options: options, handler) }
    }

    /// Moves a timer's next deadline. See ``TimerService/reschedule(_:after:)``.
    @discardableResult
    public func reschedule(_ id: TimerID, after delay: Duration) throws -> Bool {
        try self.withCore(otherwise: false) { try $0.reschedule(id, after: delay) }
    }

    /// Moves a timer's next deadline. See ``TimerService/reschedule(_:at:)``.
    @discardableResult
    public func reschedule(_ id: TimerID, at deadline: MonotonicInstant) throws -> Bool {
        try self.withCore(otherwise: false) { try $0.reschedule(id, at: deadline) }
    }

    /// Moves or creates an idle timeout. See ``TimerService/scheduleOrReschedule(id:after:options:_:)``.
    @discardableResult
    public func scheduleOrReschedule(
        id: TimerID, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Bool {
        try self.withCore(otherwise: try Self.refusal(id)) { core in
            try core.scheduleOrReschedule(id: id, after: delay, options: options, handler)
        }
    }

    /// The next deadline of a timer. See ``TimerService/deadline(of:)``.
    public func deadline(of id: TimerID) -> MonotonicInstant? {
        self.withCore(otherwise: nil) { $0.deadline(of: id) }
    }

    /// The next occurrence on the wall clock. See ``TimerService/wallClockDeadline(of:)``.
    public func wallClockDeadline(of id: TimerID) -> WallClockInstant? {
        self.withCore(otherwise: nil) { $0.wallClockDeadline(of: id) }
    }

    /// Pauses a timer. See ``TimerService/pause(_:)``.
    @discardableResult
    public func pause(_ id: TimerID) -> Bool {
        self.withCore(otherwise: false) { $0.pause(id) }
    }

    /// Resumes a paused timer. See ``TimerService/resume(_:)``.
    @discardableResult
    public func resume(_ id: TimerID) -> Bool {
        self.withCore(otherwise: false) { $0.resume(id) }
    }

    /// Whether the timer is paused. See ``TimerService/isPaused(_:)``.
    public func isPaused(_ id: TimerID) -> Bool {
        self.withCore(otherwise: false) { $0.isPaused(id) }
    }

    /// Cancels a timer. See ``TimerService/cancel(_:)-(TimerID)``.
    @discardableResult
    public func cancel(_ id: TimerID) -> Bool {
        self.coreReference._withUnsafeGuaranteedRef { $0.cancelUnlessInherited(id) }
    }

    /// Cancels exactly one timer. See ``TimerService/cancel(_:)-(TimerHandle)``.
    @discardableResult
    public func cancel(_ handle: TimerHandle) -> Bool {
        self.coreReference._withUnsafeGuaranteedRef { $0.cancelUnlessInherited(handle) }
    }

    /// The generation of the timer under `id`. See ``TimerService/generation(of:)``.
    @available(*, deprecated, message: "Keep the TimerHandle that scheduleTimer returns (or a tick's handle)")
    public func generation(of id: TimerID) -> UInt64? {
        self.withCore(otherwise: nil) { $0.generation(of: id) }
    }

    /// Cancels every timer. See ``TimerService/cancelAll()``.
    public func cancelAll() {
        self.withCore(otherwise: ()) { $0.cancelAll() }
    }

    /// Whether a timer with this ID is scheduled. See ``TimerService/isScheduled(_:)``.
    public func isScheduled(_ id: TimerID) -> Bool {
        self.withCore(otherwise: false) { $0.isScheduled(id) }
    }

    /// The IDs of all scheduled timers, in no particular order. See ``TimerService/scheduledIDs``.
    public var scheduledIDs: [TimerID] {
        self.withCore(otherwise: []) { $0.scheduledIDs }
    }

    /// The number of scheduled timers. See ``TimerService/scheduledCount``.
    public var scheduledCount: Int {
        self.withCore(otherwise: 0) { $0.scheduledCount }
    }

    /// Cancels everything, releases every handler and stops the engine. See
    /// ``TimerService/shutdown()``; each service's documentation says what its engine waits for.
    public func shutdown() {
        guard !self.core.isInherited else { return }
        self.core.close(.shutDown)
        self.stopEngine()
    }

    /// Runs `body` with the core, borrowed (``coreReference``), or returns `fallback` in a
    /// forked child (see ``TimerCoreService``).
    ///
    /// Taking `self.core` through the protocol's getter retains the core and releases it after:
    /// two atomic operations per call on the one object every caller thread shares, whose count's
    /// cache line then moves between the callers' cores. Nothing carries a typed error round
    /// the borrow (as ``TimerCore/withShard(_:_:)`` must): these calls throw untyped errors anyway.
    @inline(__always)
    private func withCore<Result>(
        otherwise fallback: @autoclosure () throws -> Result, _ body: (TimerCore) throws -> Result
    ) rethrows -> Result {
        try self.coreReference._withUnsafeGuaranteedRef { core in
            core.isInherited ? try fallback() : try body(core)
        }
    }

    /// A forked child's service schedules nothing (see ``TimerCoreService``): what the calls that
    /// schedule throw there.
    package static func refusal<Result>(_ id: TimerID?) throws(PreciseTimerError) -> Result {
        throw TimerCore.inheritedRefusal(id)
    }
}
