/// The service's state: which timers exist, when each is due, and whether the loop must be woken.
///
/// A plain struct mutated under the service's semaphore. Its transitions never call user code
/// or libevent; they return what the caller must do once the semaphore is released (wake the
/// loop, call a handler, let go of handlers).
package struct TimerRegistry {
    /// What a caller does after a transition, outside the lock.
    package struct Fire {
        package let node: TimerNode
        package let handler: @Sendable (Tick) -> Void
        package let count: UInt64
        package let missed: UInt64
        package let scheduledAt: Int64
    }

    package enum Next {
        /// Call this handler now, then (for a repeating timer) `complete` it.
        case fire(Fire)
        /// Nothing is due; the earliest deadline, or `nil` when no timer is pending.
        case idle(Int64?)
    }

    private(set) package var timers: [TimerID: TimerNode] = [:]
    private var heap = TimerHeap()
    /// Cancelled nodes still in `heap`.
    private var garbage = 0
    private var generatedIDs: UInt64 = 0
    private var sequence: UInt64 = 0
    private(set) package var isShutDown = false
    /// The latest instant at which the loop is sure to look at the heap again without being
    /// woken: its armed deadline while it sleeps, `.min` while it runs timers or a wake-up is
    /// already on its way.
    private var loopLooksAt: Int64 = .max

    package init() {}

    // MARK: Registration

    /// Adds a timer. Returns its ID and whether the loop must be woken to see it in time.
    package mutating func add(
        id requested: TimerID?, deadline: Int64, interval: Int64, options: TimerOptions,
        handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> (id: TimerID, wakeLoop: Bool) {
        guard !self.isShutDown else { throw PreciseTimerError(.shutDown, id: requested) }
        let id: TimerID
        if let requested {
            guard !requested.rawValue.isEmpty else { throw PreciseTimerError(.emptyID, id: requested) }
            guard self.timers[requested] == nil else { throw PreciseTimerError(.duplicateID, id: requested) }
            id = requested
        } else {
            id = self.generateID()
        }
        let node = TimerNode(id: id, deadline: deadline, interval: interval, options: options, handler: handler)
        self.timers[id] = node
        return (id, self.push(node))
    }

    /// `timer-N`, N counting up for the life of the service and skipping names a caller chose,
    /// so a generated ID is never handed out twice (the seed wrapper's count-based names were).
    private mutating func generateID() -> TimerID {
        while true {
            self.generatedIDs += 1
            let id = TimerID("timer-\(self.generatedIDs)")
            if self.timers[id] == nil { return id }
        }
    }

    /// Puts a pending node in the heap; `true` if the loop sleeps past its deadline.
    private mutating func push(_ node: TimerNode) -> Bool {
        node.state = .pending
        self.sequence += 1
        self.heap.insert(.init(deadline: node.deadline, sequence: self.sequence, node: node))
        guard node.deadline < self.loopLooksAt else { return false }
        self.loopLooksAt = .min
        return true
    }

    // MARK: Cancellation

    /// Ends the timer with this ID. Returns whether it existed and the handler the caller must
    /// release outside the lock (releasing runs the captures' deinits: user code).
    package mutating func cancel(_ id: TimerID) -> (found: Bool, handler: (@Sendable (Tick) -> Void)?) {
        guard let node = self.timers.removeValue(forKey: id) else { return (false, nil) }
        return (true, self.end(node))
    }

    /// Ends every timer; returns their handlers for release outside the lock.
    package mutating func cancelAll() -> [@Sendable (Tick) -> Void] {
        var handlers: [@Sendable (Tick) -> Void] = []
        handlers.reserveCapacity(self.timers.count)
        for node in self.timers.values {
            if let handler = node.handler { handlers.append(handler) }
            node.handler = nil
            node.state = .ended
        }
        self.timers.removeAll()
        self.heap.removeAll()
        self.garbage = 0
        return handlers
    }

    /// Marks the registry shut down and ends every timer. Returns `nil` if it already was.
    package mutating func shutdown() -> [@Sendable (Tick) -> Void]? {
        guard !self.isShutDown else { return nil }
        self.isShutDown = true
        return self.cancelAll()
    }

    private mutating func end(_ node: TimerNode) -> (@Sendable (Tick) -> Void)? {
        if node.state == .pending {
            self.garbage += 1
            if self.garbage > 1024, self.garbage > self.heap.count / 2 {
                self.heap.compact { $0.state == .ended }
                self.garbage = 0
            }
        }
        node.state = .ended
        defer { node.handler = nil }
        return node.handler
    }

    // MARK: Firing

    /// Pops the next due timer at `now` and applies its missed-tick policy, or reports the
    /// earliest deadline when nothing is due. Called by the loop only.
    package mutating func next(now: Int64) -> Next {
        while let entry = self.heap.min {
            let node = entry.node
            guard node.state == .pending else {
                self.heap.removeMin()
                self.garbage -= 1
                continue
            }
            guard entry.deadline <= now else {
                self.loopLooksAt = entry.deadline
                return .idle(entry.deadline)
            }
            self.heap.removeMin()
            self.loopLooksAt = .min
            return .fire(self.take(node, now: now))
        }
        self.loopLooksAt = .max
        return .idle(nil)
    }

    private mutating func take(_ node: TimerNode, now: Int64) -> Fire {
        let handler = node.handler!  // A pending node always has its handler.
        node.count += 1
        guard node.interval > 0 else {
            // One-shot auto-cancel: the ID is free before the handler runs, so it may reuse it.
            self.timers[node.id] = nil
            node.state = .ended
            node.handler = nil
            return Fire(node: node, handler: handler, count: 1, missed: 0, scheduledAt: node.deadline)
        }
        node.state = .running
        let deadline = node.deadline
        let periodsLate = UInt64((now - deadline) / node.interval)
        switch node.policy {
        case .skip:
            // Answer the latest grid point that passed; the next one stays on the grid.
            node.deadline = deadline + Int64(periodsLate) * node.interval
            return Fire(node: node, handler: handler, count: node.count, missed: periodsLate,
                        scheduledAt: node.deadline)
        case .burst:
            return Fire(node: node, handler: handler, count: node.count, missed: 0, scheduledAt: deadline)
        case .delay:
            node.deadline = now
            return Fire(node: node, handler: handler, count: node.count, missed: periodsLate,
                        scheduledAt: deadline)
        }
    }

    /// A repeating timer's handler returned: arm its next deadline unless it was cancelled
    /// meanwhile. Returns whether the loop must be woken.
    package mutating func complete(_ node: TimerNode) -> Bool {
        guard node.state == .running else { return false }
        let (next, overflow) = node.deadline.addingReportingOverflow(node.interval)
        guard !overflow else {
            // Past the clock's range (centuries of uptime): the timer cannot fire again.
            self.timers[node.id] = nil
            node.state = .ended
            node.handler = nil
            return false
        }
        node.deadline = next
        return self.push(node)
    }

    /// The number of heap entries, live and garbage (for tests of compaction).
    package var heapCount: Int { self.heap.count }
}
