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
        /// The node's epoch when it was taken: a reschedule or pause since then drops this fire.
        package let epoch: UInt32
        package let missed: UInt64
        package let scheduledAt: Int64
    }

    /// A fire whose call begins now: the handler to call and the tick's count.
    package struct Call {
        package let handler: @Sendable (Tick) -> Void
        package let count: UInt64
    }

    package enum Next {
        /// Run this timer: ``begin(_:)``, call the handler, then (repeating) ``complete(_:firedAt:now:)``.
        case fire(Fire)
        /// Nothing is due; the earliest deadline, or `nil` when no timer is pending.
        case idle(Int64?)
    }

    /// Why the registry stopped accepting timers.
    package enum End: Sendable {
        case shutDown
        /// The engine failed (a libevent call): later schedules throw this error.
        case failed(PreciseTimerError)
    }

    private(set) package var timers: [TimerID: TimerNode] = [:]
    private var heap = TimerHeap()
    /// Stale entries still in `heap` (exactly one entry is live per pending node).
    private var garbage = 0
    /// Bumped by ``cancelAll()`` and ``close(_:)``, which swap the whole table out instead of
    /// ending each node under the lock: a node of an older era is ended, whatever its state says.
    private var era: UInt32 = 0
    private var generatedIDs: UInt64 = 0
    private var sequence: UInt64 = 0
    private(set) package var end: End?
    /// The latest instant at which the loop is sure to look at the heap again without being
    /// woken: its armed deadline while it sleeps, `.min` while it runs timers or a wake-up is
    /// already on its way.
    private var loopLooksAt: Int64 = .max

    package init() {}

    package var isShutDown: Bool { self.end != nil }

    // MARK: Registration

    /// Registers a new timer under its requested ID, or under a fresh generated one when
    /// `requested` is `nil`. Returns whether the loop must be woken to see it in time.
    ///
    /// The caller creates the node (with its handler) outside the lock and keeps it, so a node
    /// refused here is released after the lock, never under it: releasing a handler runs user
    /// code, which may call back into the service.
    package mutating func add(_ node: TimerNode, requested: TimerID?) throws(PreciseTimerError) -> Bool {
        switch self.end {
        case .failed(let error): throw error
        case .shutDown: throw PreciseTimerError(.shutDown, id: requested)
        case nil: break
        }
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
        self.sequence += 1
        node.sequence = self.sequence
        node.era = self.era
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

    /// Puts a node in the heap at its `deadline`, keeping its original place among equal
    /// deadlines; `true` if the loop sleeps past that deadline.
    private mutating func push(_ node: TimerNode) -> Bool {
        node.state = .pending
        self.heap.insert(.init(deadline: node.deadline, sequence: node.sequence, epoch: node.epoch, node: node))
        guard node.deadline < self.loopLooksAt else { return false }
        self.loopLooksAt = .min
        return true
    }

    /// Makes the node's heap entry (if pending) and any fire already taken stale.
    private mutating func invalidate(_ node: TimerNode) {
        if node.state == .pending {
            self.garbage += 1
            self.sweepIfNeeded()
        }
        node.epoch &+= 1
    }

    /// Once stale entries outnumber live ones, every operation that adds one removes a few:
    /// memory stays bounded without ever holding the lock for an O(n) compaction (48 ms at a
    /// million pending timers).
    private mutating func sweepIfNeeded() {
        guard self.garbage > 1024, self.garbage > self.heap.count / 2 else { return }
        self.garbage -= self.heap.removeStale(scanning: TimerHeap.sweepBudget)
    }

    // MARK: Control

    /// Moves a timer's next deadline (see ``TimerService/reschedule(_:at:)``).
    /// Returns whether the timer exists and whether the loop must be woken.
    package mutating func reschedule(_ id: TimerID, to deadline: Int64, now: Int64) -> (found: Bool, wake: Bool) {
        guard let node = self.timers[id] else { return (false, false) }
        switch node.state {
        case .pending, .taken:
            self.invalidate(node)
            node.deadline = deadline
            node.catchUp = 0
            return (true, self.push(node))
        case .running:
            node.rescheduledTo = deadline
            return (true, false)
        case .paused:
            node.deadline = max(0, deadline - now)
            return (true, false)
        case .ended:
            return (false, false)
        }
    }

    /// Pauses a timer; returns whether it exists.
    package mutating func pause(_ id: TimerID, now: Int64) -> Bool {
        guard let node = self.timers[id] else { return false }
        switch node.state {
        case .pending:
            self.invalidate(node)
            node.deadline = max(0, node.deadline - now)
            node.state = .paused
        case .taken:
            // It was due: resumed, it fires at once.
            self.invalidate(node)
            node.deadline = 0
            node.state = .paused
        case .running:
            node.pauseWhenDone = true
        case .paused, .ended:
            break
        }
        return true
    }

    /// Resumes a paused timer with the time it had left. Returns whether it exists and whether
    /// the loop must be woken.
    package mutating func resume(_ id: TimerID, now: Int64) -> (found: Bool, wake: Bool) {
        guard let node = self.timers[id] else { return (false, false) }
        switch node.state {
        case .paused:
            node.deadline = now + node.deadline
            node.catchUp = 0
            return (true, self.push(node))
        case .running:
            node.pauseWhenDone = false
            return (true, false)
        case .pending, .taken, .ended:
            return (true, false)
        }
    }

    /// Whether the timer exists and is paused (or will park when its running call returns).
    package func isPaused(_ id: TimerID) -> Bool {
        guard let node = self.timers[id] else { return false }
        return node.state == .paused || (node.state == .running && node.pauseWhenDone)
    }

    // MARK: Cancellation

    /// Ends the timer with this ID (only if its generation matches, when one is given). Returns
    /// whether it existed and the handler the caller must release outside the lock (releasing
    /// runs the captures' deinits: user code).
    package mutating func cancel(
        _ id: TimerID, generation: UInt64? = nil
    ) -> (found: Bool, handler: (@Sendable (Tick) -> Void)?) {
        if let generation {
            guard let node = self.timers[id], node.sequence == generation else { return (false, nil) }
        }
        guard let node = self.timers.removeValue(forKey: id) else { return (false, nil) }
        return (true, self.end(node))
    }

    /// Timers swapped out of the registry by ``cancelAll()``: already ended (their era is past),
    /// unreachable from the registry, and released by whoever holds this, outside the lock.
    package struct Swept {
        fileprivate var timers: [TimerID: TimerNode]
        fileprivate var heap: TimerHeap

        /// Lets go of every handler (user code may run: call it outside the lock). A node still
        /// referenced by a fire in flight keeps nothing: its call can no longer begin.
        package func release() {
            for node in self.timers.values {
                // Safe outside the lock: no registry path reads the handler of a node of a past
                // era (``begin(_:)`` checks the era first).
                node.handler = nil
            }
        }

        /// How many timers were swept.
        package var count: Int { self.timers.count }
    }

    /// Ends every timer in O(1) under the lock: the table and the heap are swapped out whole and
    /// the era bumped, so no call of theirs can begin once the lock is released. The caller
    /// releases the handlers outside the lock with ``Swept/release()`` (271 ms of holding the
    /// lock at a million pending timers when they were ended one by one in here).
    package mutating func cancelAll() -> Swept {
        self.era &+= 1
        let swept = Swept(timers: self.timers, heap: self.heap)
        self.timers = [:]
        self.heap = TimerHeap()
        self.garbage = 0
        return swept
    }

    /// Stops accepting timers for `reason` and ends every timer. Returns `nil` if it already had
    /// stopped (the first reason stays).
    package mutating func close(_ reason: End) -> Swept? {
        guard self.end == nil else { return nil }
        self.end = reason
        return self.cancelAll()
    }

    private mutating func end(_ node: TimerNode) -> (@Sendable (Tick) -> Void)? {
        if node.state == .pending {
            self.invalidate(node)
        }
        node.state = .ended
        defer { node.handler = nil }
        return node.handler
    }

    // MARK: Firing

    /// Pops the next due timer at `now` and applies its missed-tick policy, or reports the
    /// earliest deadline when nothing is due. Called by the loop only.
    ///
    /// - Parameter limit: Deadlines after it are not due even if `now` passed them (virtual time:
    ///   a handler that moved the clock past the instant an `advance` goes to).
    package mutating func next(now: Int64, notAfter limit: Int64 = .max) -> Next {
        while let entry = self.heap.min {
            guard entry.isLive else {
                self.heap.removeMin()
                self.garbage -= 1
                continue
            }
            guard entry.deadline <= now, entry.deadline <= limit else {
                self.loopLooksAt = entry.deadline
                return .idle(entry.deadline)
            }
            self.heap.removeMin()
            self.loopLooksAt = .min
            return .fire(self.take(entry.node, now: now))
        }
        self.loopLooksAt = .max
        return .idle(nil)
    }

    /// ``next(now:)`` and, for a timer whose handler runs right here on the loop (no hop), its
    /// ``begin(_:)`` under the same lock. Returns the call to make, if any.
    package mutating func nextOnLoop(now: Int64, notAfter limit: Int64 = .max) -> (Next, Call?) {
        let next = self.next(now: now, notAfter: limit)
        guard case .fire(let fire) = next, fire.node.queue == nil else { return (next, nil) }
        return (next, self.begin(fire))
    }

    private mutating func take(_ node: TimerNode, now: Int64) -> Fire {
        node.state = .taken
        guard node.interval > 0 else {
            return Fire(node: node, epoch: node.epoch, missed: 0, scheduledAt: node.deadline)
        }
        let deadline = node.deadline
        let periodsLate = UInt64((now - deadline) / node.interval)
        switch node.policy {
        case .burst where periodsLate == 0:
            node.catchUp = 0
            return Fire(node: node, epoch: node.epoch, missed: 0, scheduledAt: deadline)
        case .burst where Int(node.catchUp) < MissedTickPolicy.maximumBurst:
            node.catchUp += 1
            return Fire(node: node, epoch: node.epoch, missed: 0, scheduledAt: deadline)
        case .skip, .burst, .delay:
            // Answer the latest grid point that passed. `.skip` (and a `.burst` out of catch-up
            // calls) goes on from there; `.delay` restarts after the call (``complete``).
            node.catchUp = 0
            node.deadline = deadline + Int64(periodsLate) * node.interval
            return Fire(node: node, epoch: node.epoch, missed: periodsLate, scheduledAt: node.deadline)
        }
    }

    /// The call of a taken timer begins: returns its handler and count, or `nil` if the timer was
    /// cancelled, paused or rescheduled since it was taken (then nothing runs). A one-shot leaves
    /// the registry here, so its handler may reuse the ID, and the service lets go of the handler
    /// once the call returns.
    package mutating func begin(_ fire: Fire) -> Call? {
        let node = fire.node
        guard node.era == self.era, node.state == .taken, node.epoch == fire.epoch, let handler = node.handler
        else { return nil }
        node.count += 1
        guard node.interval > 0 else {
            self.timers[node.id] = nil
            node.state = .ended
            node.handler = nil
            return Call(handler: handler, count: node.count)
        }
        node.state = .running
        return Call(handler: handler, count: node.count)
    }

    /// A repeating timer's handler returned at `firedAt` (the tick's instant): arm its next
    /// deadline unless it was cancelled meanwhile, or park it if it was paused. Returns whether
    /// the loop must be woken, and the handler to release outside the lock if the timer ended.
    package mutating func complete(
        _ fire: Fire, firedAt: Int64, now: Int64
    ) -> (wake: Bool, ended: (@Sendable (Tick) -> Void)?) {
        let node = fire.node
        guard node.era == self.era, node.state == .running else { return (false, nil) }
        var next: Int64
        if let rescheduled = node.rescheduledTo {
            next = rescheduled
            node.rescheduledTo = nil
        } else if node.policy == .delay, fire.missed > 0 {
            next = firedAt + node.interval  // A period was missed: the grid restarts after this call.
        } else {
            let (sum, overflow) = node.deadline.addingReportingOverflow(node.interval)
            guard !overflow else {
                // Past the clock's range (centuries of uptime): the timer cannot fire again.
                self.timers[node.id] = nil
                node.state = .ended
                defer { node.handler = nil }
                return (false, node.handler)
            }
            next = sum
        }
        if node.pauseWhenDone {
            node.pauseWhenDone = false
            node.deadline = max(0, next - now)
            node.state = .paused
            return (false, nil)
        }
        node.deadline = next
        return (self.push(node), nil)
    }

    /// The number of heap entries, live and garbage (for tests of compaction).
    package var heapCount: Int { self.heap.count }
}
