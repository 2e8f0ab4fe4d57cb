import Dispatch
import PreciseTimer

/// The ``TimerService`` API on `DispatchSourceTimer`: the reference the libevent engine is
/// measured and tested against, and the classic GCD timer wrapper done right.
///
/// One `DispatchSourceTimer` per timer, all targeting one serial queue; the registry of timers is
/// guarded by a `DispatchSemaphore`; one-shots are cancelled after they fire; a repeating timer's
/// missed periods are read from its source's `data`. It keeps every rule of ``TimerService``:
/// IDs are never reused, bad input throws, handlers never overlap themselves (the source is
/// suspended while a call runs on another queue, and resumed, always, before it is released),
/// and a cancelled timer's handler never starts again.
///
/// ```swift
/// let timers = DispatchReferenceTimer()
/// try timers.scheduleRepeating(id: "tick", every: .milliseconds(1)) { tick in … }
/// ```
///
/// - Important: handlers on ``TimerExecutor/loop`` run on the service's serial queue and must not
///   block it. Timers due at the same nanosecond fire in Dispatch's order, which is not guaranteed
///   to be scheduling order; deadlines from separate `schedule` calls differ by the time between
///   the calls, so in practice they fire in the order they were scheduled.
public final class DispatchReferenceTimer: TimerService {
    private struct Registry {
        var entries: [TimerID: DispatchTimerEntry] = [:]
        var generatedIDs: UInt64 = 0
        var isShutDown = false
    }

    private let registry = SemaphoreGuarded(Registry())
    private let queue: DispatchQueue

    /// Creates the service.
    /// - Parameter queue: The queue every timer source targets and ``TimerExecutor/loop``
    ///   handlers run on; a serial queue of its own when `nil`. A concurrent queue given here is
    ///   wrapped in a serial one, so handlers of ``TimerExecutor/loop`` timers never run in parallel.
    public init(queue: DispatchQueue? = nil) {
        self.queue = DispatchQueue(label: "DispatchReferenceTimer", target: queue)
    }

    deinit {
        self.shutdown()
    }

    /// Schedules a one-shot timer. See ``TimerService/schedule(id:after:options:_:)``.
    @discardableResult
    public func schedule(
        id: TimerID?, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.add(id: id, TimerRequest(after: delay, id: id), options: options, handler)
    }

    /// Schedules a repeating timer. See ``TimerService/scheduleRepeating(id:every:startingAfter:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID?, every interval: Duration, startingAfter delay: Duration?,
        options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.add(id: id, TimerRequest(every: interval, startingAfter: delay, id: id), options: options, handler)
    }

    private func add(
        id requested: TimerID?, _ request: TimerRequest, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerID {
        let source = DispatchSource.makeTimerSource(queue: self.queue)
        let entry: DispatchTimerEntry
        do {
            entry = try self.reserve(id: requested, request, options: options, source: source, handler)
        } catch {
            // libdispatch traps on releasing a source that was never activated.
            source.cancel()
            source.activate()
            throw error
        }
        // The source's handler holds the service weakly: a pending timer must not keep it alive.
        source.setEventHandler { [weak self, entry] in
            self?.sourceFired(entry)
        }
        entry.arm(at: entry.origin)
        source.activate()
        return entry.id
    }

    /// Registers the timer under its ID (the given one, or a fresh generated one).
    private func reserve(
        id requested: TimerID?, _ request: TimerRequest, options: TimerOptions,
        source: any DispatchSourceTimer, _ handler: @escaping @Sendable (Tick) -> Void
    )
        throws(PreciseTimerError) -> DispatchTimerEntry
    {
        try self.registry.withLock { (registry) throws(PreciseTimerError) -> DispatchTimerEntry in
            guard !registry.isShutDown else { throw PreciseTimerError(.shutDown, id: requested) }
            var id: TimerID
            if let requested {
                guard !requested.rawValue.isEmpty else { throw PreciseTimerError(.emptyID, id: requested) }
                guard registry.entries[requested] == nil else { throw PreciseTimerError(.duplicateID, id: requested) }
                id = requested
            } else {
                repeat {
                    registry.generatedIDs += 1
                    id = TimerID(TimerRegistry.generatedName(registry.generatedIDs))
                } while registry.entries[id] != nil  // Skip names a caller chose.
            }
            let deadline = MonotonicInstant.now().nanoseconds + request.firstDelay
            let entry = DispatchTimerEntry(
                id: id, deadline: deadline, interval: request.interval, options: options,
                source: source, handler: handler)
            registry.entries[id] = entry
            return entry
        }
    }

    /// Cancels a timer. See ``TimerService/cancel(_:)``.
    @discardableResult
    public func cancel(_ id: TimerID) -> Bool {
        let ended = self.registry.withLock { registry -> [Ended] in
            guard let entry = registry.entries.removeValue(forKey: id) else { return [] }
            return [Self.end(entry)]
        }
        self.finish(ended)
        return !ended.isEmpty
    }

    /// Cancels every timer. See ``TimerService/cancelAll()``.
    public func cancelAll() {
        self.finish(self.registry.withLock { Self.endAll(&$0) })
    }

    /// Whether a timer with this ID is scheduled.
    public func isScheduled(_ id: TimerID) -> Bool {
        self.registry.withLock { $0.entries[id] != nil }
    }

    /// The IDs of all scheduled timers, in no particular order.
    public var scheduledIDs: [TimerID] {
        self.registry.withLock { Array($0.entries.keys) }
    }

    /// Cancels every timer, releases every handler and refuses new timers. Never waits, so it is
    /// safe from any handler. Idempotent.
    public func shutdown() {
        self.finish(
            self.registry.withLock { registry in
                registry.isShutDown = true
                return Self.endAll(&registry)
            })
    }

    /// What is left to do for an ended timer once the lock is released.
    private typealias Ended = (entry: DispatchTimerEntry, handler: (@Sendable (Tick) -> Void)?, resume: Bool)

    /// Ends an entry just removed from the registry, under the same lock, so no call can begin
    /// between its removal and its end.
    private static func end(_ entry: DispatchTimerEntry) -> Ended {
        defer {
            entry.state = .ended
            entry.handler = nil
            entry.isSuspended = false
        }
        return (entry, entry.handler, entry.isSuspended)
    }

    private static func endAll(_ registry: inout Registry) -> [Ended] {
        defer { registry.entries.removeAll() }
        return registry.entries.values.map(Self.end)
    }

    /// Cancels the sources (resuming a suspended one, so it may be released) and releases the
    /// handlers here, outside the lock: releasing runs the captures' deinits.
    private func finish(_ ended: [Ended]) {
        for (entry, handler, resume) in ended {
            entry.source.cancel()
            if resume { entry.source.resume() }
            withExtendedLifetime(handler) {}
        }
    }

    // MARK: Firing (on `queue`)

    private func sourceFired(_ entry: DispatchTimerEntry) {
        let periods = UInt64(max(entry.source.data, 1))
        // Compute this event's calls from the grid and the source's count of passed periods.
        let calls: [(scheduledAt: Int64, missed: UInt64)]? = self.registry.withLock { _ in
            guard entry.state == .pending else { return nil }
            let first = entry.elapsedPeriods
            entry.elapsedPeriods += periods
            let latest = entry.origin + Int64(entry.elapsedPeriods - 1) * entry.interval
            guard entry.interval > 0 else { return [(entry.origin, 0)] }
            switch entry.policy {
            case .skip:
                return [(latest, periods - 1)]
            case .burst:
                return (first..<entry.elapsedPeriods).map { (entry.origin + Int64($0) * entry.interval, 0) }
            case .delay:
                return [(entry.origin + Int64(first) * entry.interval, periods - 1)]
            }
        }
        guard let calls else { return }
        guard let queue = entry.queue else {
            self.run(entry, calls)
            return
        }
        // No overlap: the source stays suspended until the calls on the other queue returned.
        let suspend = self.registry.withLock { _ -> Bool in
            guard entry.state == .pending, entry.interval > 0 else { return false }
            entry.isSuspended = true
            return true
        }
        if suspend { entry.source.suspend() }
        queue.async {
            self.run(entry, calls)
            let resume = self.registry.withLock { _ -> Bool in
                defer { entry.isSuspended = false }
                return entry.isSuspended
            }
            if resume { entry.source.resume() }
        }
    }

    /// Runs one event's calls, each begun under the lock so a cancel that returned prevents it.
    private func run(_ entry: DispatchTimerEntry, _ calls: [(scheduledAt: Int64, missed: UInt64)]) {
        for call in calls {
            let begun = self.registry.withLock { registry -> (handler: @Sendable (Tick) -> Void, count: UInt64)? in
                guard entry.state == .pending, let handler = entry.handler else { return nil }
                entry.count += 1
                if entry.interval == 0 {
                    // One-shot auto-cancel: the ID is free before the handler runs.
                    if registry.entries[entry.id] === entry { registry.entries[entry.id] = nil }
                    entry.state = .ended
                    entry.handler = nil
                } else {
                    entry.state = .running
                }
                return (handler, entry.count)
            }
            guard let begun else { return }
            var now = MonotonicInstant.now().nanoseconds
            while now < call.scheduledAt {  // Never early, even if Dispatch rounds a deadline down.
                now = MonotonicInstant.now().nanoseconds
            }
            begun.handler(
                Tick(
                    id: entry.id, count: begun.count, missed: call.missed,
                    scheduledAt: MonotonicInstant(nanoseconds: call.scheduledAt),
                    firedAt: MonotonicInstant(nanoseconds: now))
            )
            if entry.interval == 0 {
                entry.source.cancel()
                return
            }
            let restart = self.registry.withLock { _ -> Bool in
                guard entry.state == .running else { return false }
                entry.state = .pending
                guard entry.policy == .delay else { return false }
                entry.origin = now + entry.interval
                entry.elapsedPeriods = 0
                return true
            }
            if restart { entry.arm(at: entry.origin) }
        }
    }
}
