/// A 4-ary min-heap of one shard's pending timers, ordered by deadline, then by scheduling order,
/// so timers due at the same instant fire in scheduling order (libevent's own min-heap compares
/// deadlines only and is not stable, which is one reason the engine keeps its own).
///
/// Keys live in the array, not in the nodes, so comparisons touch one contiguous buffer; four
/// children per parent halve the depth of a binary heap, and the four children sit in adjacent
/// cache lines. Each node knows its index (``TimerNode/heapIndex``), so a cancel, pause or
/// reschedule takes its entry out at once: no stale entry keeps a cancelled node (and its
/// memory) alive, and nothing needs compacting later. That costs one write into each node an
/// operation moves, which with a per-shard heap is a level or two for a removal.
///
/// Entries do not retain their node: a node is in the heap only while it is pending, and a
/// pending node is always held by its shard's ``TimerTable`` (which gives it up only after the
/// registry took it out of the heap, or together with the heap in ``ShardState/cancelAll()``).
/// So sifting never touches a reference count.
package struct TimerHeap {
    package struct Entry {
        package var deadline: Int64
        package var sequence: UInt64
        package var node: Unmanaged<TimerNode>

        @inline(__always)
        static func < (lhs: Entry, rhs: Entry) -> Bool {
            FiringOrder.precedes((lhs.deadline, lhs.sequence), (rhs.deadline, rhs.sequence))
        }
    }

    private var entries: ContiguousArray<Entry> = []

    package init() {}

    package var count: Int { self.entries.count }
    package var min: Entry? { self.entries.first }

    /// The address of the earliest entry's node (0 when empty), for prefetching only.
    package var minAddress: UInt {
        self.entries.first.map { UInt(bitPattern: $0.node.toOpaque()) } ?? 0
    }

    /// Calls `body` with every node in the heap, in heap order (close to deadline order, which
    /// for timers of one delay is the order they were scheduled and allocated in).
    /// `body` gets a strong reference: it may end the table's hold on the node.
    package func forEachNode(_ body: (TimerNode) -> Void) {
        for entry in self.entries {
            body(entry.node.takeUnretainedValue())
        }
    }

    /// Adds `node` at its current deadline and sequence.
    package mutating func insert(_ node: TimerNode) {
        self.entries.append(Entry(deadline: node.fireAt, sequence: node.sequence, node: .passUnretained(node)))
        self.siftUp(from: self.entries.count - 1)
    }

    /// Removes the earliest entry; returns its node (still owned by the table).
    @discardableResult
    package mutating func removeMin() -> TimerNode? {
        guard !self.entries.isEmpty else { return nil }
        return self.remove(at: 0)
    }

    /// Removes `node`'s entry, wherever it is.
    package mutating func remove(_ node: TimerNode) {
        let index = Int(node.heapIndex)
        precondition(
            index >= 0 && index < self.entries.count
                && self.entries[index].node.toOpaque() == Unmanaged.passUnretained(node).toOpaque(),
            "TimerHeap: node not at its index")
        self.remove(at: index)
    }

    /// Removes the entry at `index`: the last entry takes its place and sifts to where it belongs.
    @discardableResult
    private mutating func remove(at index: Int) -> TimerNode {
        let removedEntry = self.entries[index]
        let removed = removedEntry.node.takeUnretainedValue()
        removed.heapIndex = -1
        let last = self.entries.removeLast()
        if index < self.entries.count {
            self.entries[index] = last
            // The parent is not after the removed entry, so a last entry not before the removed
            // one cannot go up: no need to read the parent (a cache miss at a million timers).
            if index > 0, last < removedEntry, last < self.entries[(index - 1) / 4] {
                self.siftUp(from: index)
            } else {
                self.siftDown(from: index)
            }
        }
        return removed
    }

    // Sifting moves a "hole" instead of swapping, writing each moved entry's index into its node.

    private mutating func siftUp(from start: Int) {
        self.entries.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            var hole = start
            let moving = base[hole]
            while hole > 0 {
                let parent = (hole - 1) / 4
                guard moving < base[parent] else { break }
                base[hole] = base[parent]
                base[hole].node._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: hole) }
                hole = parent
            }
            base[hole] = moving
            moving.node._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: hole) }
        }
    }

    private mutating func siftDown(from start: Int) {
        self.entries.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            let count = buffer.count
            var hole = start
            let moving = base[hole]
            while true {
                let first = 4 * hole + 1
                guard first < count else { break }
                var child = first
                for candidate in (first + 1)..<Swift.min(first + 4, count) where base[candidate] < base[child] {
                    child = candidate
                }
                guard base[child] < moving else { break }
                base[hole] = base[child]
                base[hole].node._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: hole) }
                hole = child
            }
            base[hole] = moving
            moving.node._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: hole) }
        }
    }
}
