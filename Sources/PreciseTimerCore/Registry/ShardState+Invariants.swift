extension ShardState {
    // MARK: Invariants (tests)

    /// What is wrong with the shard (empty when nothing), checked by the test services after
    /// every pass of their loop, as NIO checks its scheduled tasks after each pop:
    ///
    /// - every registered node is in exactly one place: in the heap once if pending, nowhere in
    ///   it otherwise, and never ended;
    /// - a heap entry is filed under its node's sequence, at a key not after the node's
    ///   ``TimerNode/fireAt`` (equal for a timer bound to another clock: only monotonic timers
    ///   are extended lazily);
    /// - the heap's order, the indices in the nodes and the due run hold (``TimerHeap``);
    /// - the bound timers are exactly the registered nodes with a clock binding.
    ///
    /// O(n): for tests, under the shard's lock.
    package func invariantViolations() -> [String] {
        var violations = self.heap.structureViolations()
        var registered = Set<ObjectIdentifier>()
        var pending = 0
        var boundNodes = 0
        self.timers.forEachNode { node in
            registered.insert(ObjectIdentifier(node))
            if node.state == .pending { pending += 1 }
            if node.state == .ended { violations.append("\(node.id): ended but still registered") }
            if node.hash != node.id.tableHash { violations.append("\(node.id): hash is not its ID's") }
            if UInt64(node.shard) != node.id.tableHash >> TimerCore.shardShift {
                violations.append("\(node.id): shard is not its ID's")
            }
            if node.clock != nil {
                boundNodes += 1
                if self.bound[ObjectIdentifier(node)] !== node {
                    violations.append("\(node.id): bound to a clock but not in the bound timers")
                }
            }
        }
        if registered.count != self.timers.count {
            violations.append("table: \(registered.count) nodes, counted \(self.timers.count)")
        }
        let displaced = self.timers.displacedCounts
        if displaced.kept != displaced.counted {
            violations.append("table: \(displaced.counted) nodes out of their home slot, kept as \(displaced.kept)")
        }
        if boundNodes != self.bound.count {
            violations.append("bound timers: \(self.bound.count), registered with a clock: \(boundNodes)")
        }
        var filed = Set<ObjectIdentifier>()
        self.heap.forEachKeyedEntry { entry in
            let node = entry.node.takeUnretainedValue()
            let name = node.id
            if !registered.contains(ObjectIdentifier(node)) {
                violations.append("\(name): in the heap, not registered")
            }
            if !filed.insert(ObjectIdentifier(node)).inserted { violations.append("\(name): in the heap twice") }
            if node.state != .pending { violations.append("\(name): in the heap while \(node.state)") }
            if entry.sequence != node.sequence { violations.append("\(name): filed under another sequence") }
            if entry.deadline > node.fireAt { violations.append("\(name): filed after its deadline") }
            if node.clock != nil, entry.deadline != node.fireAt {
                violations.append("\(name): bound to a clock, filed early")
            }
        }
        if filed.count != pending { violations.append("heap: \(filed.count) entries, \(pending) pending timers") }
        return violations
    }
}

extension TimerCore {
    /// Every shard's ``ShardState/invariantViolations()``, each under its lock (tests; O(n)).
    package func invariantViolations() -> [String] {
        self.shards.indices.flatMap { index in
            self.shards[index].withLock { $0.invariantViolations() }.map { "shard \(index): \($0)" }
        }
    }
}
