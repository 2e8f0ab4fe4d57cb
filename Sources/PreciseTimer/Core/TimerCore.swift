import Dispatch

/// The scheduling logic shared by ``PreciseTimer`` and the tests' manual driver: the
/// semaphore-guarded ``TimerRegistry``, and running what it says is due.
///
/// It knows nothing of libevent; its ``TimerLoop`` tells it the time and is told to wake up.
package final class TimerCore: TimerService {
    /// How many handlers one ``runDue()`` call runs before giving the loop back (so a wake-up,
    /// a shutdown or I/O on the same base is not starved by a storm of due timers).
    package static let batchLimit = 4096

    private let registry = SemaphoreGuarded(TimerRegistry())
    package let loop: any TimerLoop

    /// - Parameter loop: The clock and wake-up of whatever drives this core. It must not hold
    ///   the core (the libevent engine holds the core and gives it a separate waker).
    package init(loop: any TimerLoop) {
        self.loop = loop
    }

    // MARK: TimerService

    @discardableResult
    package func schedule(
        id: TimerID?, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.add(id: id, TimerRequest(after: delay, id: id), options: options, handler)
    }

    @discardableResult
    package func scheduleRepeating(
        id: TimerID?, every interval: Duration, startingAfter delay: Duration?,
        options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.add(id: id, TimerRequest(every: interval, startingAfter: delay, id: id), options: options, handler)
    }

    private func add(
        id: TimerID?, _ request: TimerRequest, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerID {
        // Built outside the lock: if the registry refuses it, its handler is released out here.
        let node = TimerNode(
            id: id ?? "", deadline: self.loop.now() + request.firstDelay, interval: request.interval,
            options: options, handler: handler)
        let wake = try self.registry.withLock { (registry) throws(PreciseTimerError) in
            try registry.add(node, requested: id)
        }
        if wake { self.loop.wake() }
        return node.id
    }

    @discardableResult
    package func cancel(_ id: TimerID) -> Bool {
        let (found, handler) = self.registry.withLock { $0.cancel(id) }
        withExtendedLifetime(handler) {}  // Released here, outside the lock.
        return found
    }

    package func cancelAll() {
        let handlers = self.registry.withLock { $0.cancelAll() }
        withExtendedLifetime(handlers) {}
    }

    package func isScheduled(_ id: TimerID) -> Bool {
        self.registry.withLock { $0.timers[id] != nil }
    }

    package var scheduledIDs: [TimerID] {
        self.registry.withLock { Array($0.timers.keys) }
    }

    /// Ends every timer and refuses new ones. The engine's own stop is the caller's business.
    package func shutdown() {
        _ = self.shutdownRegistry()
    }

    /// Like ``shutdown()``; returns `false` if the registry was already shut down.
    package func shutdownRegistry() -> Bool {
        let handlers = self.registry.withLock { $0.shutdown() }
        return handlers != nil
    }

    package var isShutDown: Bool {
        self.registry.withLock { $0.isShutDown }
    }

    // MARK: Driving

    /// Runs the timers due now, in deadline order, up to ``batchLimit`` of them.
    ///
    /// Handlers on ``TimerExecutor/loop`` run inline on the caller's thread; others are queued.
    /// - Returns: The earliest pending deadline, `.min` if the batch limit cut the run short
    ///   (call again soon), or `nil` when nothing is pending.
    package func runDue() -> Int64? {
        for _ in 0..<Self.batchLimit {
            let now = self.loop.now()
            let (next, handler) = self.registry.withLock { $0.nextOnLoop(now: now) }
            switch next {
            case .idle(let next):
                return next
            case .fire(let fire):
                if let queue = fire.node.queue {
                    queue.async { self.call(fire) }
                } else if let handler {
                    self.invoke(handler, for: fire)
                }
            }
        }
        return .min
    }

    /// Runs a fire that hopped to its queue. Its call begins here, under the lock, so a cancel
    /// that returned while the fire waited in the queue prevents the call.
    private func call(_ fire: TimerRegistry.Fire) {
        guard let handler = self.registry.withLock({ $0.begin(fire.node) }) else { return }
        self.invoke(handler, for: fire)
    }

    private func invoke(_ handler: @Sendable (Tick) -> Void, for fire: TimerRegistry.Fire) {
        let firedAt = self.loop.now()
        handler(
            Tick(
                id: fire.node.id, count: fire.count, missed: fire.missed,
                scheduledAt: MonotonicInstant(nanoseconds: fire.scheduledAt),
                firedAt: MonotonicInstant(nanoseconds: firedAt))
        )
        guard fire.node.interval > 0 else { return }
        if self.registry.withLock({ $0.complete(fire.node, firedAt: firedAt) }) {
            self.loop.wake()
        }
    }
}
