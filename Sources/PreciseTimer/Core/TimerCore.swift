import Dispatch

/// The scheduling logic shared by ``PreciseTimer``, the virtual-time test service and the tests'
/// manual driver: the semaphore-guarded ``TimerRegistry``, and running what it says is due.
///
/// It knows nothing of libevent; its ``TimerDoorbell`` tells it the time and is rung when the
/// loop must look at the heap again. The services wrap it and add their engine's lifecycle.
package final class TimerCore: Sendable {
    /// How many handlers one ``runDue()`` call runs before giving the loop back (so a wake-up,
    /// a shutdown or I/O on the same base is not starved by a storm of due timers).
    package static let batchLimit = 4096

    /// What ``runDue()`` leaves the loop to do.
    package enum Outcome: Equatable, Sendable {
        /// Nothing is due before this deadline: sleep until it.
        case idle(until: Int64)
        /// No timer is pending: sleep until woken.
        case empty
        /// The batch limit cut the run short with timers still due: let the loop serve its other
        /// events, then call again at once.
        case batchLimitReached
    }

    private let registry = SemaphoreGuarded(TimerRegistry())
    package let doorbell: any TimerDoorbell
    /// Whether a fire for a ``TimerExecutor/queue(_:)`` timer waits for its call (virtual time:
    /// `advance` returns only once every call it caused has returned).
    private let hopsSynchronously: Bool
    /// Queue hops whose call has begun and not yet returned (a shutdown waits for them).
    package let inFlight = InFlightCalls()
    /// Fires once the core closes.
    package let closeNotice = CloseNotice()

    /// - Parameters:
    ///   - doorbell: The clock and wake-up of whatever drives this core. It must not hold the
    ///     core (the libevent engine holds the core and gives it a separate doorbell).
    ///   - hopsSynchronously: Run queue hops with `sync` instead of `async`.
    package init(doorbell: any TimerDoorbell, hopsSynchronously: Bool = false) {
        self.doorbell = doorbell
        self.hopsSynchronously = hopsSynchronously
    }

    package var now: MonotonicInstant { MonotonicInstant(nanoseconds: self.doorbell.now()) }

    // MARK: Scheduling

    @discardableResult
    package func schedule(
        id: TimerID?, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerID {
        try self.add(id: id, TimerRequest(after: delay, now: self.doorbell.now(), id: id), options: options, handler)
    }

    @discardableResult
    package func schedule(
        id: TimerID?, at deadline: MonotonicInstant, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerID {
        try self.add(id: id, TimerRequest(at: deadline, now: self.doorbell.now(), id: id), options: options, handler)
    }

    @discardableResult
    package func scheduleRepeating(
        id: TimerID?, every interval: Duration, startingAfter delay: Duration?,
        options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerID {
        let request = try TimerRequest(every: interval, startingAfter: delay, now: self.doorbell.now(), id: id)
        return try self.add(id: id, request, options: options, handler)
    }

    @discardableResult
    package func scheduleRepeating(
        id: TimerID?, every interval: Duration, startingAt start: MonotonicInstant,
        options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerID {
        let request = try TimerRequest(every: interval, startingAt: start, now: self.doorbell.now(), id: id)
        return try self.add(id: id, request, options: options, handler)
    }

    private func add(
        id: TimerID?, _ request: TimerRequest, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerID {
        // Built outside the lock: if the registry refuses it, its handler is released out here.
        let node = TimerNode(
            id: id ?? "", deadline: request.deadline, interval: request.interval, options: options, handler: handler)
        let wake = try self.registry.withLock { (registry) throws(PreciseTimerError) in
            try registry.add(node, requested: id)
        }
        if wake { self.doorbell.wake() }
        return node.id
    }

    // MARK: Control

    @discardableResult
    package func reschedule(_ id: TimerID, after delay: Duration) throws(PreciseTimerError) -> Bool {
        let nanoseconds = try delay.validatedDelay(for: id)
        return self.move(id, to: self.doorbell.now() + nanoseconds)
    }

    @discardableResult
    package func reschedule(_ id: TimerID, at deadline: MonotonicInstant) throws(PreciseTimerError) -> Bool {
        self.move(id, to: try TimerRequest.validated(deadline, now: self.doorbell.now(), id: id))
    }

    private func move(_ id: TimerID, to deadline: Int64) -> Bool {
        let now = self.doorbell.now()
        let (found, wake) = self.registry.withLock { $0.reschedule(id, to: deadline, now: now) }
        if wake { self.doorbell.wake() }
        return found
    }

    @discardableResult
    package func pause(_ id: TimerID) -> Bool {
        let now = self.doorbell.now()
        return self.registry.withLock { $0.pause(id, now: now) }
    }

    @discardableResult
    package func resume(_ id: TimerID) -> Bool {
        let now = self.doorbell.now()
        let (found, wake) = self.registry.withLock { $0.resume(id, now: now) }
        if wake { self.doorbell.wake() }
        return found
    }

    package func isPaused(_ id: TimerID) -> Bool {
        self.registry.withLock { $0.isPaused(id) }
    }

    // MARK: Cancellation and queries

    @discardableResult
    package func cancel(_ id: TimerID) -> Bool {
        let (found, handler) = self.registry.withLock { $0.cancel(id) }
        withExtendedLifetime(handler) {}  // Released here, outside the lock.
        return found
    }

    @discardableResult
    package func cancel(_ id: TimerID, generation: UInt64) -> Bool {
        let (found, handler) = self.registry.withLock { $0.cancel(id, generation: generation) }
        withExtendedLifetime(handler) {}
        return found
    }

    package func generation(of id: TimerID) -> UInt64? {
        self.registry.withLock { $0.timers[id]?.sequence }
    }

    package func cancelAll() {
        self.registry.withLock { $0.cancelAll() }.release()  // Handlers released outside the lock.
    }

    package func isScheduled(_ id: TimerID) -> Bool {
        self.registry.withLock { $0.timers[id] != nil }
    }

    package var scheduledIDs: [TimerID] {
        self.registry.withLock { Array($0.timers.keys) }
    }

    package var scheduledCount: Int {
        self.registry.withLock { $0.timers.count }
    }

    // MARK: Closing

    /// Ends every timer (handlers released here, outside the lock) and refuses new ones: with
    /// ``PreciseTimerError/Code/shutDown``, or with the engine's error for
    /// ``TimerRegistry/End/failed(_:)``. The engine's own stop is the caller's business.
    ///
    /// - Returns: `false` if the core was already closed (the first reason stays).
    @discardableResult
    package func close(_ reason: TimerRegistry.End) -> Bool {
        guard let swept = self.registry.withLock({ $0.close(reason) }) else { return false }
        swept.release()
        self.closeNotice.fire()
        return true
    }

    package var isClosed: Bool {
        self.registry.withLock { $0.isShutDown }
    }

    // MARK: Driving

    /// Runs the timers due now, in deadline order, up to ``batchLimit`` of them.
    ///
    /// Handlers on ``TimerExecutor/loop`` run inline on the caller's thread; others are queued.
    ///
    /// - Parameter limit: Run no timer whose deadline is after it (see ``TimerRegistry/next(now:notAfter:)``).
    package func runDue(notAfter limit: Int64 = .max) -> Outcome {
        for _ in 0..<Self.batchLimit {
            let now = self.doorbell.now()
            let (next, call) = self.registry.withLock { $0.nextOnLoop(now: now, notAfter: limit) }
            switch next {
            case .idle(let next):
                return next.map { .idle(until: $0) } ?? .empty
            case .fire(let fire):
                if let queue = fire.node.queue {
                    if self.hopsSynchronously {
                        queue.sync { self.hop(fire) }
                    } else {
                        queue.async { self.hop(fire) }
                    }
                } else if let call {
                    self.invoke(call, for: fire)
                }
            }
        }
        return .batchLimitReached
    }

    /// Runs a fire that hopped to its queue. Its call begins here, under the lock, so a cancel
    /// (or pause, or reschedule) that returned while the fire waited in the queue prevents it.
    /// The call is counted in ``inFlight`` as it begins, under the same lock, so a close that
    /// follows sees it.
    private func hop(_ fire: TimerRegistry.Fire) {
        let call = self.registry.withLock { registry -> TimerRegistry.Call? in
            let call = registry.begin(fire)
            if call != nil { self.inFlight.enter() }
            return call
        }
        guard let call else { return }
        defer { self.inFlight.leave() }
        self.invoke(call, for: fire)
    }

    private func invoke(_ call: TimerRegistry.Call, for fire: TimerRegistry.Fire) {
        let firedAt = self.doorbell.now()
        call.handler(
            Tick(
                id: fire.node.id, count: call.count, missed: fire.missed,
                scheduledAt: MonotonicInstant(nanoseconds: fire.scheduledAt),
                firedAt: MonotonicInstant(nanoseconds: firedAt), generation: fire.node.sequence)
        )
        guard fire.node.interval > 0 else { return }
        let now = self.doorbell.now()
        let (wake, ended) = self.registry.withLock { $0.complete(fire, firedAt: firedAt, now: now) }
        withExtendedLifetime(ended) {}
        if wake { self.doorbell.wake() }
    }
}
