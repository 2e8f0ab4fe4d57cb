extension ShardState {
    /// Timers swapped out of the registry by ``cancelAll()`` or ``close(_:)``: already ended
    /// (their era is past), unreachable from the registry, and released by whoever holds this,
    /// outside the lock, exactly once: the value cannot be copied, and ``release()`` consumes
    /// it.
    package struct Swept: ~Copyable {
        /// One shard's table and heap, as swapped out.
        fileprivate struct Part {
            let timers: TimerTable
            let heap: TimerHeap
        }

        fileprivate var parts: [Part]
        /// How many timers were swept.
        package private(set) var count: Int

        fileprivate init(timers: TimerTable, heap: TimerHeap) {
            self.parts = [Part(timers: timers, heap: heap)]
            self.count = timers.count
        }

        /// A sweep dropped without ``release()`` would leak every timer it holds
        /// (the tables own their nodes unmanaged): a debug build stops there; a release build lets
        /// go of them here rather than leak, wherever the value was dropped.
        deinit {
            guard !self.parts.isEmpty else { return }
            assertionFailure("ShardState.Swept dropped without release(): release it outside the lock")
            Self.release(self.parts)
        }

        /// Nothing swept yet: sweeps of several shards are gathered into one with ``absorb(_:)``.
        package init() {
            self.parts = []
            self.count = 0
        }

        /// Takes another sweep's timers into this one (a close sweeps every shard, then releases
        /// them in one pass).
        package mutating func absorb(_ other: consuming Swept) {
            self.parts.append(contentsOf: other.parts)
            self.count += other.count
            other.parts = []  // Handed over: its deinit has nothing left to release.
        }

        /// Lets go of every handler and node, in one pass over the nodes of every shard swept
        /// (user code may run: call it outside the locks). A node still referenced by a fire in
        /// flight keeps nothing: its call can no longer begin.
        ///
        /// Pending timers go first, in the order they were scheduled when their sequences are
        /// dense (a bulk of timers scheduled together, the case where a shutdown is slow), which
        /// is the order their nodes, closures and captures were allocated in: memory is then read
        /// nearly in sequence and freed next to what was just freed, rather than one shard at a
        /// time (a shard's timers are every 64th allocation, scattered). Otherwise shard by shard,
        /// in heap order. The tables' remaining timers (paused, or with a call in flight) follow.
        ///
        /// While a timer is released, the node sixteen places on starts loading (``Prefetch``),
        /// and the table slot and closure context of the node eight places on (whose node has
        /// arrived by then). Without the hints every timer waits for each of those cache misses
        /// in series.
        package consuming func release() {
            Self.release(self.parts)
            self.parts = []
        }

        private static func release(_ sweeps: [Part]) {
            // Safe outside the lock: no registry path reads the handler of a node of a past era
            // (``begin(_:onLoop:)`` checks the era first), and nothing reaches these tables or heaps any more.
            let order = Self.releaseOrder(sweeps)
            // A sweep whose timers are all pending (its table holds as many as its heap, the usual
            // shutdown) hands its table's references over, and its table's storage is freed first:
            // glibc merges every chunk in its fast free lists when a chunk of 64 KiB or more is
            // freed (a table of 4 096 slots is one), which after many small frees walks them all. Its
            // nodes are then released directly,
            // without a table probe.
            let handedOver = sweeps.map { $0.timers.count == $0.heap.count }
            for (sweep, handOver) in zip(sweeps, handedOver) where handOver {
                sweep.timers.abandonAll()
            }
            for index in order.indices {
                if index + 16 < order.count {
                    Prefetch.node(at: order[index + 16].node)
                }
                if index + 8 < order.count {
                    // Still alive (owned by its table, or by this pass for a table that handed its
                    // references over): only the nodes before `index` were let go.
                    let ahead = order[index + 8]
                    let table = handedOver[ahead.sweep] ? nil : sweeps[ahead.sweep].timers
                    let node = Unmanaged<TimerNode>.fromOpaque(UnsafeRawPointer(bitPattern: ahead.node)!)
                    node._withUnsafeGuaranteedRef { Prefetch.handler(of: $0, slotIn: table) }
                }
                let item = order[index]
                let node = Unmanaged<TimerNode>.fromOpaque(UnsafeRawPointer(bitPattern: item.node)!)
                // Borrowed, not retained: the table's reference, let go of just below, is the last.
                node._withUnsafeGuaranteedRef { $0.handler = nil }
                if handedOver[item.sweep] {
                    node.release()  // The reference the table handed over.
                } else {
                    _ = node._withUnsafeGuaranteedRef { sweeps[item.sweep].timers.remove($0, hash: $0.hash) }
                }
            }
            for sweep in sweeps {
                sweep.timers.removeAll { $0.handler = nil }
            }
        }

        /// A pending node to release: its address, and which sweep's table holds it.
        private struct Pending {
            /// 0: none (a gap in the sequence numbers).
            var node: UInt
            var sweep: Int
        }

        /// The pending nodes of `sweeps` in release order (see ``release()``),
        /// read from the heaps' entries without touching a node.
        private static func releaseOrder(_ sweeps: [Part]) -> [Pending] {
            var total = 0
            var low = UInt64.max
            var high = UInt64.min
            for sweep in sweeps {
                sweep.heap.forEachEntry { sequence, _ in
                    total += 1
                    low = Swift.min(low, sequence)
                    high = Swift.max(high, sequence)
                }
            }
            var order: [Pending] = []
            order.reserveCapacity(total)
            // Dense: placed by sequence number, in O(n), into at most two places (32 bytes) per
            // timer, a transient 48 bytes a timer with the order itself, freed before this returns.
            if total > 1, high - low < UInt64(2 * total) {
                var placed = [Pending](repeating: Pending(node: 0, sweep: 0), count: Int(high - low) + 1)
                // Sequences are unique per core; nodes that share one (hand-made in a test) follow
                // the others, so that every pending node is in the order exactly once.
                var shared: [Pending] = []
                for (index, sweep) in sweeps.enumerated() {
                    sweep.heap.forEachEntry { sequence, node in
                        let pending = Pending(node: UInt(bitPattern: node.toOpaque()), sweep: index)
                        if placed[Int(sequence - low)].node == 0 {
                            placed[Int(sequence - low)] = pending
                        } else {
                            shared.append(pending)
                        }
                    }
                }
                for pending in placed where pending.node != 0 { order.append(pending) }
                order.append(contentsOf: shared)
            } else {
                for (index, sweep) in sweeps.enumerated() {
                    sweep.heap.forEachEntry { _, node in
                        order.append(Pending(node: UInt(bitPattern: node.toOpaque()), sweep: index))
                    }
                }
            }
            return order
        }
    }

    /// Ends every timer in O(1) under the lock: the table and the heap are swapped out whole and
    /// the era bumped, so no call of theirs can begin once the lock is released. The caller
    /// releases the handlers outside the lock with ``Swept/release()`` (ending them one by one in
    /// here would hold the lock for the whole of a million timers' releases).
    package mutating func cancelAll() -> Swept {
        self.era &+= 1
        if !self.bound.isEmpty {
            self.bound = [:]
            self.boundDeadlines.removeAll()
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
