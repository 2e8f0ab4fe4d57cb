extension ShardState {
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
}
