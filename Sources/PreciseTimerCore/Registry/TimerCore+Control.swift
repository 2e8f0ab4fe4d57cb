import Dispatch
import Synchronization

extension TimerCore {
    // MARK: Control

    @discardableResult
    package func reschedule(_ id: TimerID, after delay: Duration) throws(PreciseTimerError) -> Bool {
        let nanoseconds = try delay.validatedDelay(for: id)
        return try self.move(id) { now throws(PreciseTimerError) in
            try TimerRequest.deadline(now: now, after: nanoseconds, id: id)
        }
    }

    @discardableResult
    package func reschedule(_ id: TimerID, at deadline: MonotonicInstant) throws(PreciseTimerError) -> Bool {
        try self.move(id) { now throws(PreciseTimerError) in try TimerRequest.validated(deadline, now: now, id: id) }
    }

    /// Moves the timer `handle` names, and only that one (not a newer timer under its ID), to
    /// `deadline`; returns whether it still exists.
    @discardableResult
    package func reschedule(_ handle: TimerHandle, at deadline: MonotonicInstant) throws(PreciseTimerError) -> Bool {
        try self.move(handle.id, hash: handle.tableHash, generation: handle.generation, location: handle.location) {
            now throws(PreciseTimerError) in
            try TimerRequest.validated(deadline, now: now, id: handle.id)
        }
    }

    /// Pauses the timer `handle` names, and only that one; returns whether it still exists.
    @discardableResult
    package func pause(_ handle: TimerHandle) -> Bool {
        self.pause(handle.id, hash: handle.tableHash, generation: handle.generation, location: handle.location)
    }

    /// Moves the timer under `id` to the deadline `deadline(now)` gives, with one clock reading for
    /// both.
    @inline(__always)
    func move(_ id: TimerID, to deadline: (Int64) throws(PreciseTimerError) -> Int64) throws(PreciseTimerError) -> Bool
    {
        try self.move(id, hash: id.tableHash, generation: nil, location: 0, to: deadline)
    }

    /// ``move(_:to:)`` with the ID's ``TimerID/tableHash`` at hand, and with a `generation`, only
    /// the timer of that generation (at `location`, when known): `id` is built only if the shard
    /// needs it (a handle's generated ID is compared by its number).
    @inline(__always)
    private func move(
        _ id: @autoclosure () -> TimerID, hash: UInt64, generation: UInt64?, location: UInt,
        to deadline: (Int64) throws(PreciseTimerError) -> Int64
    ) throws(PreciseTimerError) -> Bool {
        let shard = self.shard(for: hash)
        self.prefetchSlot(shard: shard, hash: hash)  // Overlaps the clock and the lock.
        if location != 0 { Prefetch.node(at: location) }  // And so does the node.
        let now = self.doorbell.now()
        let deadline = try deadline(now)
        let (found, wake) = self.withLockedShard(shard) {
            $0.reschedule(id(), hash: hash, to: deadline, now: now, generation: generation, location: location)
        }
        if wake { self.wakeLoop(for: shard, deadline: deadline) }
        return found
    }

    /// Pauses the timer under `id`.
    @discardableResult
    package func pause(_ id: TimerID) -> Bool {
        self.pause(id, hash: id.tableHash, generation: nil, location: 0)
    }

    /// Pauses the timer under `id`, whose ``TimerID/tableHash`` is `hash` (with a `generation`,
    /// only the timer of that generation, at `location` when known); `id` is built only if the
    /// shard needs it.
    @inline(__always)
    private func pause(
        _ id: @autoclosure () -> TimerID, hash: UInt64, generation: UInt64?, location: UInt
    ) -> Bool {
        let shard = self.shard(for: hash)
        self.prefetchSlot(shard: shard, hash: hash)  // Overlaps the clock and the lock.
        if location != 0 { Prefetch.node(at: location) }  // And so does the node.
        let now = self.doorbell.now()
        return self.withLockedShard(shard) {
            $0.pause(id(), hash: hash, now: now, generation: generation, location: location)
        }
    }

    @discardableResult
    package func resume(_ id: TimerID) -> Bool {
        let now = self.doorbell.now()
        let hash = id.tableHash
        let shard = self.shard(for: hash)
        let (found, wake) = self.withLockedShard(shard) { $0.resume(id, hash: hash, now: now) }
        if wake { self.wakeLoop(for: shard, deadline: .min) }  // Its deadline is the shard's business: ring.
        return found
    }

    package func isPaused(_ id: TimerID) -> Bool {
        let hash = id.tableHash
        return self.withLockedShard(self.shard(for: hash)) { $0.isPaused(id, hash: hash) }
    }

    // MARK: Cancellation and queries

    /// Ends the timer under `id` (with a `generation`, only the timer of that generation, as a
    /// handle names it); returns whether it did.
    @discardableResult
    package func cancel(_ id: TimerID, generation: UInt64? = nil) -> Bool {
        self.cancel(id, hash: id.tableHash, generation: generation, location: 0)
    }

    /// ``cancel(_:generation:)`` of `id`, or `false` in a core inherited through `fork()` (see
    /// ``TimerCore/isInherited``): what `PreciseTimer`'s inlinable `cancel` calls.
    @usableFromInline
    package func cancelUnlessInherited(_ id: TimerID) -> Bool {
        !self.isInherited && self.cancel(id)
    }

    /// ``cancel(_:)-(TimerHandle)``, or `false` in a core inherited through `fork()`.
    @usableFromInline
    package func cancelUnlessInherited(_ handle: TimerHandle) -> Bool {
        !self.isInherited && self.cancel(handle)
    }

    /// Ends the timer `handle` names, and only that one; returns whether it did. With the
    /// handle's ``TimerHandle/location`` the node is found by its address, so its slot and the
    /// node itself are fetched at once, before the lock, rather than one after the other.
    @discardableResult
    package func cancel(_ handle: TimerHandle) -> Bool {
        self.cancel(handle.id, hash: handle.tableHash, generation: handle.generation, location: handle.location)
    }

    /// `id` is built only if the shard needs it: a generated ID is compared by its number.
    @inline(__always)
    private func cancel(
        _ id: @autoclosure () -> TimerID, hash: UInt64, generation: UInt64?, location: UInt
    ) -> Bool {
        let shard = self.shard(for: hash)
        self.prefetchSlot(shard: shard, hash: hash, inOrder: true)  // Overlaps taking the lock.
        if location != 0 { Prefetch.node(at: location) }  // A hint: never dereferenced.
        var ended = self.withLockedShard(shard) {
            $0.cancel(id(), hash: hash, generation: generation, location: location)
        }
        // Released here, outside the lock: the handler, and the node unless this thread keeps
        // it for its next plain timer.
        withExtendedLifetime(ended.handler) {}
        var node = ended.node.take()
        guard node != nil else { return false }
        SpareNode.offer(&node)
        self.instruments.cancelled(1)
        return true
    }

    package func generation(of id: TimerID) -> UInt64? {
        let hash = id.tableHash
        return self.withLockedShard(self.shard(for: hash)) { $0.node(id, hash: hash)?.sequence }
    }

    /// Ends every timer scheduled before the call, shard by shard, each in O(1) under its lock;
    /// handlers are released outside the locks.
    package func cancelAll() {
        for shard in self.shards {
            let swept = shard.withLock { $0.cancelAll() }
            let count = swept.count
            swept.release()
            self.instruments.cancelled(count)
        }
    }

    package func isScheduled(_ id: TimerID) -> Bool {
        let hash = id.tableHash
        return self.withLockedShard(self.shard(for: hash)) { $0.node(id, hash: hash) != nil }
    }

    /// Every shard's IDs, each shard's under its own lock (a 64th of the timers at a time).
    package var scheduledIDs: [TimerID] {
        var ids: [TimerID] = []
        ids.reserveCapacity(self.scheduledCount)
        for shard in self.shards {
            shard.withLock { $0.appendIDs(to: &ids) }
        }
        return ids
    }

    /// The sum of the shards' counts, each read under its shard's lock (64 locks, no timer
    /// touched). Not published by each call for a lock-free read: that store moved a line
    /// between the cores of every two caller threads on each call.
    package var scheduledCount: Int {
        self.shards.reduce(0) { sum, shard in sum + shard.withLock { $0.count } }
    }

    /// The slots of every shard's ID table and the entries of every shard's heap storage, each
    /// under its lock (tests: a drained registry gives its memory back).
    package var capacities: (table: Int, heap: Int) {
        self.shards.reduce((0, 0)) { total, shard in
            let capacities = shard.withLock { $0.capacities }
            return (total.0 + capacities.table, total.1 + capacities.heap)
        }
    }

    // MARK: Introspection and idle timeouts

    /// The next deadline of the timer under `id`, on the core's clock: `nil` when no timer has
    /// the ID, when it is paused, or when it is a one-shot whose call has begun. While a repeating
    /// timer's handler runs, the deadline it will be re-armed at if the call returns on time.
    /// One shard lock and one table look-up: O(1), no copy of the registry.
    package func deadline(of id: TimerID) -> MonotonicInstant? {
        let hash = id.tableHash
        return self.withLockedShard(self.shard(for: hash)) { $0.nextDeadline(of: id, hash: hash) }
            .map(MonotonicInstant.init(nanoseconds:))
    }

    /// The next occurrence on the wall clock of the timer under `id` (see
    /// ``TimerService/wallClockDeadline(of:)``).
    package func wallClockDeadline(of id: TimerID) -> WallClockInstant? {
        let hash = id.tableHash
        return self.withLockedShard(self.shard(for: hash)) { $0.nextWallClockDeadline(of: id, hash: hash) }
            .map(WallClockInstant.init(nanosecondsSinceEpoch:))
    }

    /// Pushes the pending timer under `id` to now + `delay` (``reschedule(_:after:)``), or, when
    /// none is pending (or it is a one-shot whose call has begun), schedules a one-shot with
    /// `handler` there: one step under the ID's shard lock, so two first touches of one ID never
    /// race to ``PreciseTimerError/Code/duplicateID`` and a touch never loses to an expiry that
    /// has not begun.
    ///
    /// - Returns: `true` when a new timer was created.
    /// - Throws: ``PreciseTimerError/Code/emptyID``, ``PreciseTimerError/Code/invalidDelay``,
    ///   ``PreciseTimerError/Code/reservedID`` (only when it would create a timer under a
    ///   generated name) or the close reason; nothing changes then.
    package func scheduleOrReschedule(
        id: TimerID, after delay: Duration, options: TimerOptions, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> Bool {
        if id.rawValue.isEmpty { throw PreciseTimerError(.emptyID, id: id) }
        let now = self.doorbell.now()
        // The same request `schedule(after:)` makes, its clock included (a `.continuous` session
        // must count its idle time through a suspend however it was created).
        let request = try TimerTrigger.after(delay).request(
            now: now, clock: options.clock, driver: self.doorbell, id: id)
        let deadline = request.deadline
        // Checked on every touch: bad options are refused whether or not they create a timer.
        let tolerance = try Self.validatedTolerance(options, id: id)
        let hash = id.tableHash
        let shard = self.shard(for: hash)
        // The usual touch: the timer exists and moves; nothing is built or counted.
        let (moved, wake) = self.withLockedShard(shard) { $0.reschedule(id, hash: hash, to: deadline, now: now) }
        if moved {
            if wake { self.wakeLoop(for: shard, deadline: deadline) }
            return false
        }
        // A creation: the node is built outside the lock, used or not (an unused node's handler
        // is released out here).
        let node = NamedTimerNode(
            id: id, deadline: deadline, interval: 0, options: options, clock: request.clock, tolerance: tolerance,
            handler: handler)
        node.name(number: self.sequence.next(), hash: hash)
        if id.isGenerated { throw PreciseTimerError(.reservedID, id: id) }
        // A creation, counted before the timer is visible (see ``schedule(_:id:options:_:)``); a
        // touch that created it on another thread in between makes this one a move after all.
        self.instruments.scheduled()
        let created: Bool
        let pushed: Bool
        do {
            (created, pushed) = try self.withLockedShard(shard) {
                (registry) throws(PreciseTimerError) -> (Bool, Bool) in
                let (found, wake) = registry.reschedule(id, hash: hash, to: deadline, now: now)
                return found ? (false, wake) : (true, try registry.add(node, hash: hash))
            }
        } catch {
            self.instruments.refused()
            throw error
        }
        if !created { self.instruments.refused() }
        // A new timer on another clock wakes the loop whatever its deadline, as `schedule` does:
        // the engine arms that clock's timerfd at the end of the loop's pass.
        if created, request.clock != nil {
            self.wakeLoop(for: shard, deadline: .min)
        } else if pushed {
            self.wakeLoop(for: shard, deadline: deadline)
        }
        return created
    }
}
