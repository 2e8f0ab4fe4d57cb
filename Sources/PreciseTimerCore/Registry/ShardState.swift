/// One shard of the service's state: which of its timers exist, when each is due, and whether
/// the loop must be woken.
///
/// A plain struct mutated under its shard's semaphore (``TimerCore`` holds several, each timer in
/// the one its ID hashes to). Its transitions never call user code
/// or libevent; they return what the caller must do once the semaphore is released (wake the
/// loop, call a handler, let go of handlers).
package struct ShardState {
    /// A due timer, taken from the heap: the caller calls ``begin(_:)`` right before running its
    /// handler, outside the lock.
    package struct Fire {
        package let node: TimerNode
        /// The node's epoch when it was taken: a reschedule or pause since then drops this fire.
        package let epoch: UInt32
        package let missed: UInt64
        package let scheduledAt: Int64
        /// A wall-clock timer's occurrence this call answers (``Tick/wallClockDeadline``);
        /// `Int64.min` for other timers.
        package var occurrence: Int64 = .min
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

    /// Where a timer stands in firing order: by deadline, then by scheduling order.
    package struct Head: Comparable, Sendable {
        package var deadline: Int64
        package var sequence: UInt64
        /// The node's address when the loop looked (for ``prefetch(address:)`` only: it may be
        /// stale by the time it is used, and is never dereferenced); 0 when unknown.
        package var address: UInt = 0

        /// After every timer: no timer pending.
        package static let none = Head(deadline: .max, sequence: .max)
        /// Before every timer: the loop will look anyway, nothing needs to wake it.
        package static let running = Head(deadline: .min, sequence: 0)

        package init(deadline: Int64, sequence: UInt64, address: UInt = 0) {
            self.deadline = deadline
            self.sequence = sequence
            self.address = address
        }

        @inline(__always)
        package static func < (lhs: Head, rhs: Head) -> Bool {
            lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.sequence < rhs.sequence
        }

        /// The same place in firing order (the address does not count).
        @inline(__always)
        package static func == (lhs: Head, rhs: Head) -> Bool {
            lhs.deadline == rhs.deadline && lhs.sequence == rhs.sequence
        }
    }

    /// Why the registry stopped accepting timers.
    package enum End: Sendable {
        case shutDown
        /// The engine failed (a libevent call): later schedules throw this error.
        case failed(PreciseTimerError)
    }

    private(set) package var timers = TimerTable()
    private var heap = TimerHeap()
    /// Bumped by ``cancelAll()`` and ``close(_:)``, which swap the whole table out instead of
    /// ending each node under the lock: a node of an older era is ended, whatever its state says.
    private var era: UInt32 = 0
    private(set) package var end: End?
    /// The timer the loop is sure to look at by its deadline without being told again: this
    /// shard's head as the loop last saw it (``peek()``), or an earlier timer pushed since,
    /// for which the loop was told (see ``push(_:)``); ``Head/running`` while the loop pops.
    private var loopLooksAt = Head.none
    /// The timers bound to the continuous or the wall clock (see ``ClockBinding``): few, so a
    /// ``rebase(now:)`` walks them all.
    private var bound: [ObjectIdentifier: TimerNode] = [:]
    /// Where the clocks of bound timers are read; the real clocks when `nil`.
    private let clocks: (any TimerDriver)?
    /// Bumped whenever a bound timer comes, goes or moves on its own clock: an engine that arms
    /// timers on the wall and continuous clocks re-reads ``earliestBoundDeadlines()`` then.
    private(set) package var boundVersion: UInt64 = 0

    /// - Parameter clocks: The driver whose wall and continuous clocks bound timers follow (the
    ///   virtual-time service's are virtual); the real clocks when `nil`.
    package init(clocks: (any TimerDriver)? = nil) {
        self.clocks = clocks
    }

    /// The three clocks, the monotonic one being `now`.
    private func readings(_ now: Int64) -> ClockBinding.Readings {
        guard let clocks = self.clocks else {
            return ClockBinding.Readings(
                monotonic: now, continuous: continuousNanoseconds(), wall: wallClockNanoseconds())
        }
        return ClockBinding.Readings(clocks, monotonic: now)
    }

    package var isShutDown: Bool { self.end != nil }

    // MARK: Registration

    /// Registers a timer under the ID, hash and sequence the caller gave it (``TimerNode/name(_:)``).
    /// Returns whether the loop must be woken to see it in time.
    ///
    /// The caller creates the node (with its handler) outside the lock and keeps it, so a node
    /// refused here is released after the lock, never under it: releasing a handler runs user
    /// code, which may call back into the service.
    ///
    /// - Throws: ``PreciseTimerError/Code/duplicateID`` when the ID is taken (nothing changed),
    ///   ``PreciseTimerError/Code/shutDown`` or the engine's failure once closed.
    package mutating func add(_ node: TimerNode) throws(PreciseTimerError) -> Bool {
        switch self.end {
        case .failed(let error): throw error
        case .shutDown: throw PreciseTimerError(.shutDown, id: node.id)
        case nil: break
        }
        guard self.timers.insert(node, hash: node.hash) == nil else {
            throw PreciseTimerError(.duplicateID, id: node.id)
        }
        node.era = self.era
        if node.clock != nil {
            self.bound[ObjectIdentifier(node)] = node
            self.boundVersion &+= 1
        }
        return self.push(node)
    }

    /// Puts a node in the heap at its `deadline`, keeping its original place among equal
    /// deadlines. Returns `true` if it comes before what the loop is sure to look at here: the
    /// caller then marks the shard for the loop and wakes it if it sleeps past this deadline
    /// (``TimerCore``), after which the loop is sure to look by this timer's deadline, so only
    /// a push earlier still reports again.
    private mutating func push(_ node: TimerNode) -> Bool {
        node.state = .pending
        self.heap.insert(node)
        let head = Head(deadline: node.deadline, sequence: node.sequence)
        guard head < self.loopLooksAt else { return false }
        self.loopLooksAt = head
        return true
    }

    /// Takes the node out of the heap (if pending) and makes any fire already taken stale.
    private mutating func invalidate(_ node: TimerNode) {
        if node.state == .pending {
            self.heap.remove(node)
        }
        node.epoch &+= 1
    }

    // MARK: Control

    /// Moves a timer's next deadline (see ``TimerService/reschedule(_:at:)``).
    /// Returns whether the timer exists and whether the loop must be woken.
    package mutating func reschedule(
        _ id: TimerID, hash: UInt64, to deadline: Int64, now: Int64
    ) -> (found: Bool, wake: Bool) {
        guard let node = self.timers.find(id, hash: hash) else { return (false, false) }
        switch node.state {
        case .pending, .taken:
            self.invalidate(node)
            node.deadline = deadline
            node.catchUp = 0
            self.retarget(node, to: deadline, now: now)
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
    package mutating func pause(_ id: TimerID, hash: UInt64, now: Int64) -> Bool {
        guard let node = self.timers.find(id, hash: hash) else { return false }
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
    /// Resumes a paused timer; `resumed` is whether it was paused (a running timer is not).
    package mutating func resume(_ id: TimerID, hash: UInt64, now: Int64) -> (resumed: Bool, wake: Bool) {
        guard let node = self.timers.find(id, hash: hash) else { return (false, false) }
        switch node.state {
        case .paused:
            node.deadline = saturatingAdd(now, node.deadline)  // At the clock's end: never fires.
            node.catchUp = 0
            self.retarget(node, to: node.deadline, now: now)
            return (true, self.push(node))
        case .running:
            // Paused while its handler ran: it was to park when the call returns; now it won't.
            let wasPaused = node.pauseWhenDone
            node.pauseWhenDone = false
            return (wasPaused, false)
        case .pending, .taken, .ended:
            return (false, false)
        }
    }

    /// Whether the timer exists and is paused (or will park when its running call returns).
    package func isPaused(_ id: TimerID, hash: UInt64) -> Bool {
        guard let node = self.timers.find(id, hash: hash) else { return false }
        return node.state == .paused || (node.state == .running && node.pauseWhenDone)
    }

    // MARK: Cancellation

    /// Ends the timer with this ID (only if its generation matches, when one is given). Returns
    /// whether it existed and the handler the caller must release outside the lock (releasing
    /// runs the captures' deinits: user code).
    package mutating func cancel(
        _ id: TimerID, hash: UInt64, generation: UInt64? = nil
    ) -> (found: Bool, handler: (@Sendable (Tick) -> Void)?) {
        if let generation {
            guard let node = self.timers.find(id, hash: hash), node.sequence == generation else { return (false, nil) }
        }
        guard let node = self.timers.remove(id, hash: hash) else { return (false, nil) }
        return (true, self.end(node))
    }

    /// The node registered under `id` (for queries: its generation, whether it exists).
    package func node(_ id: TimerID, hash: UInt64) -> TimerNode? {
        self.timers.find(id, hash: hash)
    }

    /// Timers swapped out of the registry by ``cancelAll()``: already ended (their era is past),
    /// unreachable from the registry, and released by whoever holds this, outside the lock.
    package struct Swept {
        fileprivate let timers: TimerTable
        fileprivate let heap: TimerHeap
        /// How many timers were swept.
        package let count: Int

        fileprivate init(timers: TimerTable, heap: TimerHeap) {
            self.timers = timers
            self.heap = heap
            self.count = timers.count
        }

        /// Lets go of every handler and node, in one pass over the nodes (user code may run: call
        /// it outside the lock). A node still referenced by a fire in flight keeps nothing: its
        /// call can no longer begin.
        ///
        /// Pending timers go first, in heap order, which for timers of one delay is close to the
        /// order they were allocated in: their nodes, closures and captures then come from memory
        /// nearly in sequence rather than in hash order.
        /// The table's remaining timers (paused, or with a call in flight) follow.
        package func release() {
            // Safe outside the lock: no registry path reads the handler of a node of a past era
            // (``begin(_:)`` checks the era first), and nothing reaches this table or heap any more.
            self.heap.forEachNode { node in
                node.handler = nil
                self.timers.remove(node.id, hash: node.hash)
            }
            self.timers.removeAll { $0.handler = nil }
        }
    }

    /// Ends every timer in O(1) under the lock: the table and the heap are swapped out whole and
    /// the era bumped, so no call of theirs can begin once the lock is released. The caller
    /// releases the handlers outside the lock with ``Swept/release()`` (271 ms of holding the
    /// lock at a million pending timers when they were ended one by one in here).
    package mutating func cancelAll() -> Swept {
        self.era &+= 1
        if !self.bound.isEmpty {
            self.bound = [:]
            self.boundVersion &+= 1
        }
        let swept = Swept(timers: self.timers, heap: self.heap)
        self.timers = TimerTable()
        self.heap = TimerHeap()
        return swept
    }

    /// Stops accepting timers for `reason` and ends every timer. Returns `nil` if it already had
    /// stopped (the first reason stays).
    package mutating func close(_ reason: End) -> Swept? {
        guard self.end == nil else { return nil }
        self.end = reason
        return self.cancelAll()
    }

    /// Moves the handler out of the node, leaving nil: a bitwise swap, so the closure's reference
    /// count (a cache miss on a cold timer) is not touched under the lock (`Optional.take()`
    /// retained and released it there).
    @inline(__always)
    private static func moveHandler(out node: TimerNode) -> (@Sendable (Tick) -> Void)? {
        var handler: (@Sendable (Tick) -> Void)? = nil
        swap(&handler, &node.handler)
        return handler
    }

    private mutating func end(_ node: TimerNode) -> (@Sendable (Tick) -> Void)? {
        if node.state == .pending {
            self.invalidate(node)
        }
        self.forget(node)
        node.state = .ended
        return Self.moveHandler(out: node)
    }

    // MARK: Firing

    /// Pops the next due timer at `now` and applies its missed-tick policy, or reports the
    /// earliest deadline when nothing is due. Called by the loop only.
    ///
    /// - Parameter limit: Deadlines after it are not due even if `now` passed them (virtual time:
    ///   a handler that moved the clock past the instant an `advance` goes to).
    package mutating func next(now: Int64, notAfter limit: Int64 = .max) -> Next {
        while true {
            guard let entry = self.heap.min else {
                self.loopLooksAt = .none
                return .idle(nil)
            }
            guard entry.deadline <= now, entry.deadline <= limit else {
                self.loopLooksAt = Head(deadline: entry.deadline, sequence: entry.sequence)
                return .idle(entry.deadline)
            }
            let node = self.heap.removeMin()!
            if let clock = node.clock {
                // An estimate came due: the timer's own clock decides (see ``ClockBinding``).
                let clocks = self.readings(now)
                let (due, estimate) = clock.resolve(estimate: node.deadline, clocks)
                node.deadline = estimate
                guard due else {
                    node.deadline = max(node.deadline, saturatingAdd(now, 1))
                    self.heap.insert(node)
                    continue
                }
                node.deadline = min(node.deadline, now)
                self.loopLooksAt = .running
                return .fire(self.take(node, now: now, clocks: clocks))
            }
            self.loopLooksAt = .running
            return .fire(self.take(node, now: now))
        }
    }

    /// The loop looks at this shard: returns the earliest pending timer (``Head/none`` when none is pending). Until the next `peek`, a
    /// timer that comes before it makes ``add(_:)`` (and every other push) ask for a wake-up.
    package mutating func peek() -> Head {
        self.loopLooksAt =
            self.heap.min.map { Head(deadline: $0.deadline, sequence: $0.sequence, address: self.heap.minAddress) }
            ?? .none
        return self.loopLooksAt
    }

    /// ``next(now:)`` and, for a timer whose handler runs right here on the loop (no hop), its
    /// ``begin(_:)`` under the same lock. Returns the call to make, if any.
    package mutating func nextOnLoop(now: Int64, notAfter limit: Int64 = .max) -> (Next, Call?) {
        let next = self.next(now: now, notAfter: limit)
        guard case .fire(let fire) = next, fire.node.queue == nil else { return (next, nil) }
        return (next, self.begin(fire))
    }

    private mutating func take(_ node: TimerNode, now: Int64, clocks: ClockBinding.Readings? = nil) -> Fire {
        node.state = .taken
        if let clock = node.clock, clock.kind == .wall, let clocks {
            return self.takeWallClock(node, clock, now: now, clocks: clocks)
        }
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
        guard node.era == self.era, node.state == .taken, node.epoch == fire.epoch, node.handler != nil
        else { return nil }
        node.count += 1
        guard node.repeats else {
            self.timers.remove(node.id, hash: node.hash)
            self.forget(node)
            node.state = .ended
            return Call(handler: Self.moveHandler(out: node)!, count: node.count)
        }
        node.state = .running
        return Call(handler: node.handler!, count: node.count)
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
        if node.rescheduledTo != TimerNode.notRescheduled {
            next = node.rescheduledTo
            node.rescheduledTo = TimerNode.notRescheduled
            self.retarget(node, to: next, now: now)
        } else if let clock = node.clock, let schedule = clock.schedule {
            guard let occurrence = schedule.next(after: WallClockInstant(nanosecondsSinceEpoch: clock.anchor)) else {
                // The schedule has no occurrence left: the timer ends as a fired one-shot does.
                self.timers.remove(node.id, hash: node.hash)
                self.forget(node)
                node.state = .ended
                return (false, Self.moveHandler(out: node))
            }
            clock.anchor = occurrence.nanosecondsSinceEpoch
            self.boundVersion &+= 1
            next = clock.resolve(estimate: node.deadline, self.readings(now)).estimate
        } else if node.policy == .delay, fire.missed > 0 {
            // A period was missed: the grid restarts after this call (at the clock's end: never).
            next = saturatingAdd(firedAt, node.interval)
        } else {
            let (sum, overflow) = node.deadline.addingReportingOverflow(node.interval)
            guard !overflow else {
                // Past the clock's range (centuries of uptime): the timer cannot fire again.
                self.timers.remove(node.id, hash: node.hash)
                self.forget(node)
                node.state = .ended
                return (false, Self.moveHandler(out: node))
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

    // MARK: Bound timers

    /// Takes a due wall-clock timer: a one-shot answers its instant; a calendar timer counts the
    /// occurrences that passed since the one it was due for and applies its policy: `.skip` and
    /// `.delay` answer the latest, `missed` counting the others; `.burst` answers each in turn, at
    /// most ``MissedTickPolicy/maximumBurst`` in a row. The count is bounded (``occurrenceScan``):
    /// after a very long sleep a schedule that fires every second is caught up over several calls.
    private mutating func takeWallClock(
        _ node: TimerNode, _ clock: ClockBinding, now: Int64, clocks: ClockBinding.Readings
    ) -> Fire {
        var answered = clock.anchor
        var missed: UInt64 = 0
        if let schedule = clock.schedule {
            var latest = clock.anchor
            var later: UInt64 = 0
            while later < Self.occurrenceScan,
                let occurrence = schedule.next(after: WallClockInstant(nanosecondsSinceEpoch: latest)),
                occurrence.nanosecondsSinceEpoch <= clocks.wall
            {
                latest = occurrence.nanosecondsSinceEpoch
                later += 1
            }
            switch node.policy {
            case .burst where later == 0:
                node.catchUp = 0
            case .burst where Int(node.catchUp) < MissedTickPolicy.maximumBurst:
                node.catchUp += 1
            case .skip, .burst, .delay:
                node.catchUp = 0
                answered = latest
                missed = later
            }
            clock.anchor = answered
        }
        // Where the occurrence fell on the monotonic clock, for `scheduledAt` and lateness.
        let scheduledAt = min(now, saturatingSubtract(now, saturatingSubtract(clocks.wall, answered)))
        var fire = Fire(node: node, epoch: node.epoch, missed: missed, scheduledAt: scheduledAt)
        fire.occurrence = answered
        return fire
    }

    /// At most this many passed occurrences are counted per call of a calendar timer.
    private static let occurrenceScan: UInt64 = 4096

    /// The clocks moved against each other (a step, a suspend, or the engine's wall-clock timer
    /// fired): re-estimates every pending bound timer. Returns whether the loop must be woken.
    package mutating func rebase(now: Int64) -> Bool {
        guard !self.bound.isEmpty else { return false }
        let clocks = self.readings(now)
        var wake = false
        for node in self.bound.values where node.state == .pending {
            let estimate = node.clock!.resolve(estimate: node.deadline, clocks).estimate
            guard estimate != node.deadline else { continue }
            self.heap.remove(node)
            node.deadline = estimate
            wake = self.push(node) || wake
            self.boundVersion &+= 1
        }
        return wake
    }

    /// The earliest deadline of a pending timer on each clock other than the monotonic one:
    /// what the engine arms its `CLOCK_REALTIME` and `CLOCK_BOOTTIME` timerfds at.
    package func earliestBoundDeadlines() -> (wall: Int64?, continuous: Int64?) {
        var wall: Int64?
        var continuous: Int64?
        for node in self.bound.values where node.state == .pending {
            let clock = node.clock!
            switch clock.kind {
            case .wall: wall = min(wall ?? .max, clock.anchor)
            case .continuous: continuous = min(continuous ?? .max, saturatingAdd(node.deadline, clock.anchor))
            }
        }
        return (wall, continuous)
    }

    /// The number of timers bound to the continuous or the wall clock.
    package var boundCount: Int { self.bound.count }

    private mutating func forget(_ node: TimerNode) {
        guard node.clock != nil else { return }
        self.bound[ObjectIdentifier(node)] = nil
        self.boundVersion &+= 1
    }

    /// Moves a bound timer's deadline on its own clock to match monotonic `deadline`.
    private mutating func retarget(_ node: TimerNode, to deadline: Int64, now: Int64) {
        guard let clock = node.clock else { return }
        clock.retarget(to: deadline, self.readings(now))
        self.boundVersion &+= 1
    }

    /// The earliest deadline of a pending timer in this shard, read without touching what the
    /// loop saw (unlike ``peek()``).
    package var earliestPendingDeadline: Int64? { self.heap.min?.deadline }

    /// The number of heap entries (for tests: one per pending timer).
    package var heapCount: Int { self.heap.count }

    /// The number of registered timers.
    package var count: Int { self.timers.count }

    /// Appends the IDs of every registered timer.
    package func appendIDs(to ids: inout [TimerID]) {
        self.timers.forEachNode { ids.append($0.id) }
    }
}
