/// The service's state: which timers exist, when each is due, and whether the loop must be woken.
///
/// A plain struct mutated under the service's semaphore. Its transitions never call user code
/// or libevent; they return what the caller must do once the semaphore is released (wake the
/// loop, call a handler, let go of handlers).
package struct TimerRegistry {
    /// A due timer, taken from the heap: the caller calls ``begin(_:)`` right before running its
    /// handler, outside the lock.
    package struct Fire {
        package let node: TimerNode
        package let count: UInt64
        package let missed: UInt64
        package let scheduledAt: Int64
    }

    package enum Next {
        /// Run this timer: ``begin(_:)``, call the handler, then (repeating) ``complete(_:)``.
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

    /// Registers a new timer under its requested ID, or under a fresh generated one when
    /// `requested` is `nil`. Returns whether the loop must be woken to see it in time.
    ///
    /// The caller creates the node (with its handler) outside the lock and keeps it, so a node
    /// refused here is released after the lock, never under it: releasing a handler runs user
    /// code, which may call back into the service.
    package mutating func add(_ node: TimerNode, requested: TimerID?) throws(PreciseTimerError) -> Bool {
        guard !self.isShutDown else { throw PreciseTimerError(.shutDown, id: requested) }
        if let requested {
            guard !requested.rawValue.isEmpty else { throw PreciseTimerError(.emptyID, id: requested) }
            node.id = requested
        } else {
            node.id = self.generateID()
        }
        // One hash and one probe for the common case; a taken name is put back as it was.
        while let existing = self.timers.updateValue(node, forKey: node.id) {
            self.timers[existing.id] = existing
            guard requested == nil else { throw PreciseTimerError(.duplicateID, id: requested) }
            node.id = self.generateID()
        }
        return self.push(node)
    }

    /// The next `timer-N`, N counting up for the life of the service. ``add`` skips names a
    /// caller chose, so a generated ID is never handed out twice (the seed wrapper's count-based
    /// names were).
    private mutating func generateID() -> TimerID {
        self.generatedIDs += 1
        return TimerID(Self.generatedName(self.generatedIDs))
    }

    /// `"timer-" + n` without string interpolation: up to `timer-999999999` the result is a small
    /// string stored inline, with no allocation (a million pending timers is a normal load).
    package static func generatedName(_ number: UInt64) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 26) { buffer in
            let prefix: StaticString = "timer-"
            var length = prefix.utf8CodeUnitCount
            for index in 0..<length { buffer[index] = prefix.utf8Start[index] }
            var digits = number
            let firstDigit = length
            repeat {
                buffer[length] = UInt8(ascii: "0") + UInt8(digits % 10)
                digits /= 10
                length += 1
            } while digits > 0
            buffer[firstDigit..<length].reverse()
            return String(decoding: buffer[0..<length], as: UTF8.self)
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

    /// ``next(now:)`` and, for a timer whose handler runs right here on the loop (no hop), its
    /// ``begin(_:)`` under the same lock. Returns the handler to call, if any.
    package mutating func nextOnLoop(now: Int64) -> (Next, (@Sendable (Tick) -> Void)?) {
        let next = self.next(now: now)
        guard case .fire(let fire) = next, fire.node.queue == nil else { return (next, nil) }
        return (next, self.begin(fire.node))
    }

    private mutating func take(_ node: TimerNode, now: Int64) -> Fire {
        node.state = .taken
        node.count += 1
        guard node.interval > 0 else {
            return Fire(node: node, count: 1, missed: 0, scheduledAt: node.deadline)
        }
        let deadline = node.deadline
        let periodsLate = UInt64((now - deadline) / node.interval)
        switch node.policy {
        case .skip:
            // Answer the latest grid point that passed; the next one stays on the grid.
            node.deadline = deadline + Int64(periodsLate) * node.interval
            return Fire(node: node, count: node.count, missed: periodsLate, scheduledAt: node.deadline)
        case .burst:
            return Fire(node: node, count: node.count, missed: 0, scheduledAt: deadline)
        case .delay:
            return Fire(node: node, count: node.count, missed: periodsLate, scheduledAt: deadline)
        }
    }

    /// The call of a taken timer begins: returns its handler, or `nil` if the timer was cancelled
    /// since it was taken (then nothing runs). A one-shot leaves the registry here, so its handler
    /// may reuse the ID, and the service lets go of the handler once the call returns.
    package mutating func begin(_ node: TimerNode) -> (@Sendable (Tick) -> Void)? {
        guard node.state == .taken, let handler = node.handler else { return nil }
        guard node.interval > 0 else {
            self.timers[node.id] = nil
            node.state = .ended
            node.handler = nil
            return handler
        }
        node.state = .running
        return handler
    }

    /// A repeating timer's handler returned: arm its next deadline unless it was cancelled
    /// meanwhile. Returns whether the loop must be woken.
    package mutating func complete(_ node: TimerNode, firedAt: Int64) -> Bool {
        guard node.state == .running else { return false }
        if node.policy == .delay {
            node.deadline = firedAt  // The grid restarts from the call, as `Tick.firedAt` reports it.
        }
        let (next, overflow) = node.deadline.addingReportingOverflow(node.interval)
        guard !overflow else {
            // Past the clock's range (centuries of uptime): the timer cannot fire again. Its
            // handler goes with the node, which the caller releases after the lock.
            self.timers[node.id] = nil
            node.state = .ended
            return false
        }
        node.deadline = next
        return self.push(node)
    }

    /// The number of heap entries, live and garbage (for tests of compaction).
    package var heapCount: Int { self.heap.count }
}
