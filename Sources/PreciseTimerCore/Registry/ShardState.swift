/// One shard of the service's state: which of its timers exist, when each is due, and whether
/// the loop must be woken.
///
/// A plain struct mutated under its shard's semaphore (``TimerCore`` holds several, each timer in
/// the one its ID hashes to). Its transitions never call user code
/// or libevent; they return what the caller must do once the semaphore is released (wake the
/// loop, call a handler, let go of handlers).
package struct ShardState {
    /// A due timer, taken from the heap: the caller calls ``begin(_:onLoop:)`` right before running its
    /// handler, outside the lock.
    package struct Fire {
        package let node: TimerNode
        /// The node's epoch when it was taken: a reschedule or pause since then drops this fire.
        package let epoch: UInt32
        package var missed: UInt64
        package var scheduledAt: Int64
        /// A wall-clock timer's occurrence this call answers (``Tick/wallClockDeadline``);
        /// `nil` for other timers and for a calendar timer's moved call.
        package var occurrence: Int64?
        /// What the loop does with the fire before (or instead of) a call.
        package var work: Work = .call
        /// The wall clock when the timer was taken (calendar timers: what its schedule is asked about).
        package var wall: Int64 = 0

        package init(node: TimerNode, epoch: UInt32, missed: UInt64, scheduledAt: Int64) {
            self.node = node
            self.epoch = epoch
            self.missed = missed
            self.scheduledAt = scheduledAt
        }
    }

    /// What a taken calendar timer needs from its schedule, asked by the loop outside the lock
    /// (see ``ClockBinding/Phase``).
    package enum Work: UInt8, Sendable {
        /// Nothing: the call answers ``Fire/occurrence`` as it is.
        case call
        /// The schedule's latest occurrence not after ``Fire/wall`` (and how many passed)
        /// replaces ``Fire/occurrence``; then the call.
        case catchUp
        /// No call: the schedule's first occurrence after ``Fire/wall`` becomes the timer's next
        /// (``ShardState/commitReview(_:first:second:)``).
        case resume
        /// No call: the timer starts afresh from ``Fire/wall`` if two occurrences lie before its
        /// next one (``ShardState/commitReview(_:first:second:)``).
        case restartCheck
    }

    /// A fire whose call begins now: the handler to call and the tick's count.
    package struct Call {
        package let handler: @Sendable (Tick) -> Void
        package let count: UInt64
    }

    /// A plain one-shot the loop took, began and ended in one step under the lock
    /// (``nextPlainOnLoop(now:notAfter:seen:)``): its call begins now.
    package struct PlainFire {
        /// The node, ended and out of the registry: the loop's reference, released after the
        /// call, outside the lock. Its ID, deadline and sequence make the tick.
        package let node: TimerNode
        /// The handler, moved out of the node.
        package let handler: TimerNode.StoredHandler
    }

    package enum Next {
        /// Run this timer: ``begin(_:onLoop:)``, call the handler, then (repeating) ``complete(_:firedAt:now:)``.
        case fire(Fire)
        /// Nothing is due; the earliest deadline, or `nil` when no timer is pending.
        case idle(Int64?)
    }

    /// Where a timer stands in firing order: by deadline, then by scheduling order.
    package struct Head: Comparable, Sendable {
        package var deadline: Int64
        package var sequence: UInt64
        /// The node's address when the loop looked (for ``Prefetch/line(at:)`` only: it may be
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
            FiringOrder.precedes((lhs.deadline, lhs.sequence), (rhs.deadline, rhs.sequence))
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

    // Stored in this order on purpose: what every call reads or writes comes first, so a call
    // touches the state's first two cache lines (with two caller threads each line is a transfer
    // between their cores), and `end` is boxed rather than an 88-byte error inline. What only a
    // bound timer, a clock event or the close needs comes last.
    package internal(set) var timers = TimerTable()
    /// Bumped whenever a bound timer comes, goes or moves on its own clock: an engine that arms
    /// timers on the wall and continuous clocks re-reads ``earliestBoundDeadlines()`` then.
    package internal(set) var boundVersion: UInt64 = 0
    /// Bumped by ``cancelAll()`` and ``close(_:)``, which swap the whole table out instead of
    /// ending each node under the lock: a node of an older era is ended, whatever its state says.
    var era: UInt32 = 0
    /// ``end``, boxed: one pointer to test per schedule instead of an error kept inline.
    private var endBox: EndBox?
    /// The timer the loop is sure to look at by its deadline without being told again: this
    /// shard's head as the loop last saw it (``peek()``), or an earlier timer pushed since,
    /// for which the loop was told (see ``push(_:)``); ``Head/running`` while the loop pops.
    var loopLooksAt = Head.none
    var heap = TimerHeap()
    /// The timers bound to the continuous or the wall clock (see ``ClockBinding``). Only a
    /// clock event walks them all (``rebase(now:)``); a change to one is O(log n)
    /// (``boundDeadlines``).
    var bound: [ObjectIdentifier: TimerNode] = [:]
    /// The earliest deadlines of the bound timers on their own clocks, in O(log n) per change.
    var boundDeadlines = BoundDeadlines()
    /// Where the clocks of bound timers are read; the real clocks when `nil`.
    let clocks: (any TimerDriver)?

    /// Why the registry stopped accepting timers; `nil` while it accepts them.
    package internal(set) var end: End? {
        get { self.endBox?.end }
        set { self.endBox = newValue.map(EndBox.init) }
    }

    private final class EndBox: Sendable {
        let end: End
        init(_ end: End) { self.end = end }
    }

    /// - Parameter clocks: The driver whose wall and continuous clocks bound timers follow (the
    ///   virtual-time service's are virtual); the real clocks when `nil`.
    package init(clocks: (any TimerDriver)? = nil) {
        self.clocks = clocks
    }

    /// The three clocks, the monotonic one being `now`.
    func readings(_ now: Int64) -> ClockBinding.Readings {
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
        try self.add(node, hash: node.hash)
    }

    /// ``add(_:)`` with the node's ``TimerNode/hash`` already computed by the caller (outside
    /// the lock).
    package mutating func add(_ node: TimerNode, hash: UInt64) throws(PreciseTimerError) -> Bool {
        let owned = Unmanaged.passRetained(node)
        do {
            return try self.add(owned: owned, hash: hash)
        } catch {
            owned.release()
            throw error
        }
    }

    /// ``add(_:hash:)`` of a node whose reference the caller hands over to the table: kept when
    /// the node is registered, left to the caller (to release after the lock) when it throws.
    @inline(__always)
    package mutating func add(owned: Unmanaged<TimerNode>, hash: UInt64) throws(PreciseTimerError) -> Bool {
        switch self.end {
        case .failed(let error): throw error
        case .shutDown: throw PreciseTimerError(.shutDown, id: owned._withUnsafeGuaranteedRef { $0.id })
        case nil: break
        }
        guard self.timers.insert(owned: owned, hash: hash) == nil else {
            throw PreciseTimerError(.duplicateID, id: owned._withUnsafeGuaranteedRef { $0.id })
        }
        return owned._withUnsafeGuaranteedRef { self.registered($0) }
    }

    /// The rest of ``add(owned:hash:)`` once the table holds the node.
    @inline(__always)
    private mutating func registered(_ node: TimerNode) -> Bool {
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
    @inline(__always)
    mutating func push(_ node: TimerNode) -> Bool {
        node.state = .pending
        self.heap.insert(node)
        if node.clock != nil { self.boundDeadlines.noteInserted(node, bound: self.bound) }
        let head = Head(deadline: node.fireAt, sequence: node.sequence)
        guard head < self.loopLooksAt else { return false }
        self.loopLooksAt = head
        return true
    }

    /// Takes the node out of the heap (if pending) and makes any fire already taken stale.
    mutating func invalidate(_ node: TimerNode) {
        if node.state == .pending {
            self.heap.remove(node)
        }
        node.epoch &+= 1
    }

    // MARK: Control

    /// The slot and the node of the timer under `id`; with a `generation`, only the timer of
    /// that generation (a handle's), and with a `location` too (the handle's hint, see
    /// ``TimerHandle/location``), only the node at that address, found without reading another
    /// node. The node is borrowed: valid until the table changes.
    @inline(__always)
    func lookUp(
        _ id: @autoclosure () -> TimerID, hash: UInt64, generation: UInt64?, location: UInt
    ) -> (index: Int, node: Unmanaged<TimerNode>)? {
        if location != 0, let generation {
            // The handle's timer, if registered, is at its location: no other node is a match.
            guard let found = self.timers.slot(ofNodeAt: location, hash: hash),
                found.node._withUnsafeGuaranteedRef({ $0.sequence == generation && $0.isNamed(id(), hash: hash) })
            else { return nil }
            return found
        }
        guard let found = self.timers.slot(of: id(), hash: hash),
            generation == nil || found.node._withUnsafeGuaranteedRef({ $0.sequence }) == generation
        else { return nil }
        return found
    }

    /// Moves a timer's next deadline (see ``TimerService/reschedule(_:at:)``); with a
    /// `generation`, only the timer of that generation (a handle's, which may give its
    /// `location`). Returns whether the timer exists and whether the loop must be woken.
    package mutating func reschedule(
        _ id: @autoclosure () -> TimerID, hash: UInt64, to deadline: Int64, now: Int64, generation: UInt64? = nil,
        location: UInt = 0
    ) -> (found: Bool, wake: Bool) {
        guard let found = self.lookUp(id(), hash: hash, generation: generation, location: location) else {
            return (false, false)
        }
        // Borrowed, as in ``cancel(_:hash:generation:location:)``: the table's reference keeps
        // it alive, and a strong one would retain and release it, two atomic operations per touch.
        return found.node._withUnsafeGuaranteedRef { self.reschedule(found: $0, to: deadline, now: now) }
    }

    /// ``reschedule(_:hash:to:now:generation:location:)`` of the node found.
    @inline(__always)
    private mutating func reschedule(found node: TimerNode, to deadline: Int64, now: Int64) -> (found: Bool, wake: Bool)
    {
        switch node.state {
        case .pending where node.clock == nil && deadline >= node.deadline:
            // Later (an idle timeout pushed on): lazy extension. The heap entry stays where it is,
            // now early, and the loop files it again when it reaches the top (``settleHead()``),
            // so a touch writes the node and moves nothing in the heap.
            node.deadline = deadline
            node.catchUp = 0
            node.epoch &+= 1
            return (true, false)
        case .pending, .taken:
            self.invalidate(node)
            node.deadline = deadline
            node.catchUp = 0
            self.retarget(node, to: deadline, now: now)
            return (true, self.push(node))
        case .running:
            node.deadline = deadline
            node.isRescheduled = true
            return (true, false)
        case .paused:
            node.deadline = max(0, deadline - now)
            return (true, false)
        case .ended:
            return (false, false)
        }
    }

    /// Pauses a timer (with a `generation`, only the timer of that generation, and its handle's
    /// `location`); returns whether it exists.
    package mutating func pause(
        _ id: @autoclosure () -> TimerID, hash: UInt64, now: Int64, generation: UInt64? = nil, location: UInt = 0
    ) -> Bool {
        guard let found = self.lookUp(id(), hash: hash, generation: generation, location: location) else {
            return false
        }
        found.node._withUnsafeGuaranteedRef { self.pause(found: $0, now: now) }  // Borrowed, as above.
        return true
    }

    /// ``pause(_:hash:now:generation:location:)`` of the node found.
    @inline(__always)
    private mutating func pause(found node: TimerNode, now: Int64) {
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
    }

    /// Resumes a paused timer with the time it had left: `resumed` is whether it was paused (a
    /// running timer is not), `wake` whether the loop must be woken.
    package mutating func resume(_ id: TimerID, hash: UInt64, now: Int64) -> (resumed: Bool, wake: Bool) {
        guard let node = self.timers.find(id, hash: hash) else { return (false, false) }
        switch node.state {
        case .paused:
            node.deadline = saturatingAdd(now, node.deadline)  // At the clock's end: never fires.
            node.catchUp = 0
            self.retarget(node, to: node.deadline, now: now)
            if let clock = node.clock, clock.isCalendar {
                // A calendar timer goes on with its schedule: the loop asks it at once.
                clock.phase = .resumed
                node.deadline = now
            }
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

    /// Ends the timer with this ID (only if its generation matches, when one is given, and only
    /// the node at its handle's `location`, when given). Returns
    /// the node it ended (`nil`: none) and its handler, both for the caller to release outside
    /// the lock: the handler's captures and a wall-clock timer's schedule are user code, run by
    /// their deinits, and the node may hold the last reference to either.
    package mutating func cancel(
        _ id: @autoclosure () -> TimerID, hash: UInt64, generation: UInt64? = nil, location: UInt = 0
    ) -> (node: TimerNode?, handler: TimerNode.StoredHandler?) {
        // Ended before its slot is cleared: the heap's writes (a sift's lines, or the far tier's
        // dead bit) then go out while the table's slots shift instead of holding up the lock's
        // release (an atomic operation waits for every write before it). Found in one step and
        // removed in another, the node is never retained. The table is not touched in between.
        guard let (slot, node) = self.lookUp(id(), hash: hash, generation: generation, location: location) else {
            return (nil, nil)
        }
        let handler = node._withUnsafeGuaranteedRef { self.end($0) }
        return (self.timers.remove(atSlot: slot), handler)
    }

    /// The node registered under `id` (for queries: its generation, whether it exists).
    package func node(_ id: TimerID, hash: UInt64) -> TimerNode? {
        self.timers.find(id, hash: hash)
    }

    /// Moves the handler out of the node, leaving nil: a bitwise swap, so the closure's reference
    /// count (a cache miss on a cold timer) is not touched under the lock (`Optional.take()`
    /// retained and released it there).
    @inline(__always)
    static func moveHandler(out node: TimerNode) -> (@Sendable (Tick) -> Void)? {
        Self.moveStoredHandler(out: node)?.body
    }

    /// ``moveHandler(out:)``, the handler left in its struct (to return through `withLock`).
    @inline(__always)
    static func moveStoredHandler(out node: TimerNode) -> TimerNode.StoredHandler? {
        var handler: TimerNode.StoredHandler? = nil
        swap(&handler, &node.storedHandler)
        return handler
    }

    /// Ends `node` and moves its handler out, still wrapped: a closure returned bare through
    /// the lock's generic `withLock` is reabstracted, which allocates a thunk (under the lock);
    /// the struct is returned as it is, and released by the caller outside the lock.
    @inline(__always)
    mutating func end(_ node: TimerNode) -> TimerNode.StoredHandler? {
        if node.state == .pending {
            self.invalidate(node)
        }
        self.forget(node)
        node.state = .ended
        return Self.moveStoredHandler(out: node)
    }
}
