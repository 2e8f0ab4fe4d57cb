/// A 4-ary min-heap of one shard's pending timers, ordered by deadline, then by scheduling order,
/// so timers due at the same instant fire in scheduling order (libevent's own min-heap compares
/// deadlines only and is not stable, which is one reason the engine keeps its own).
///
/// Keys live in the array, not in the nodes, so comparisons touch one contiguous buffer; four
/// children per parent halve the depth of a binary heap, and the four children sit in adjacent
/// cache lines.
///
/// A cancel, pause or reschedule takes a timer's entry out at once, so no stale entry keeps a
/// cancelled node (and its memory) alive and nothing needs compacting later. To find the entry,
/// each timer in the heap holds a small *slot* number (``TimerNode/heapSlot``), and two dense
/// arrays indexed by slot say where its entry is and which node it is. A sift writes each moved
/// entry's position into that dense array (4 bytes a timer, 64 KB for a shard of 16 000), not
/// into its node: at a million timers the nodes are cache misses, and a pop of a 100 000-timer
/// storm moves five entries.
///
/// Nodes are held unretained: a node is in the heap only while it is pending, and a pending node
/// is always held by its shard's ``TimerTable`` (which gives it up only after the registry took
/// it out of the heap, or together with the heap in ``TimerRegistry/cancelAll()``).
package struct TimerHeap {
    package struct Entry {
        package var deadline: Int64
        package var sequence: UInt64
        /// The timer's slot in ``positions`` and ``nodes``.
        fileprivate var slot: Int32

        @inline(__always)
        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.sequence < rhs.sequence
        }
    }

    private var entries: ContiguousArray<Entry> = []
    /// By slot: the index of the timer's entry in `entries`.
    private var positions: ContiguousArray<Int32> = []
    /// By slot: the timer (unretained), or nil for a free slot.
    private var nodes: ContiguousArray<Unmanaged<TimerNode>?> = []
    /// Slots given back by removals, reused first.
    private var freeSlots: ContiguousArray<Int32> = []

    package init() {}

    package var count: Int { self.entries.count }
    package var min: Entry? { self.entries.first }

    /// The address of the earliest entry's node (0 when empty), for prefetching only.
    package var minAddress: UInt {
        guard let first = self.entries.first, let node = self.nodes[Int(first.slot)] else { return 0 }
        return UInt(bitPattern: node.toOpaque())
    }

    /// The number of slots (in use or free).
    package var slotCount: Int { self.nodes.count }

    /// The node in `slot`, if the slot is in use.
    @inline(__always)
    package func node(atSlot slot: Int) -> TimerNode? {
        slot < self.nodes.count ? self.nodes[slot]?.takeUnretainedValue() : nil
    }

    /// Adds `node` at its current deadline and sequence.
    package mutating func insert(_ node: TimerNode) {
        let slot: Int32
        if let free = self.freeSlots.popLast() {
            slot = free
            self.nodes[Int(slot)] = .passUnretained(node)
        } else {
            slot = Int32(truncatingIfNeeded: self.nodes.count)
            self.nodes.append(.passUnretained(node))
            self.positions.append(0)
        }
        node.heapSlot = slot
        self.entries.append(Entry(deadline: node.deadline, sequence: node.sequence, slot: slot))
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
        let slot = Int(node.heapSlot)
        precondition(
            slot >= 0 && slot < self.nodes.count
                && self.nodes[slot]?.toOpaque() == Unmanaged.passUnretained(node).toOpaque(),
            "TimerHeap: the node is not in this heap")
        self.remove(at: Int(self.positions[slot]))
    }

    /// Removes the entry at `index`: the last entry takes its place and sifts to where it belongs.
    @discardableResult
    private mutating func remove(at index: Int) -> TimerNode {
        let removedEntry = self.entries[index]
        let slot = Int(removedEntry.slot)
        let removed = self.nodes[slot]!.takeUnretainedValue()
        removed.heapSlot = -1
        self.nodes[slot] = nil
        self.freeSlots.append(removedEntry.slot)
        let last = self.entries.removeLast()
        if index < self.entries.count {
            self.entries[index] = last
            // The parent is not after the removed entry, so a last entry not before the removed
            // one cannot go up: no need to read the parent.
            if index > 0, last < removedEntry, last < self.entries[(index - 1) / 4] {
                self.siftUp(from: index)
            } else {
                self.siftDown(from: index)
            }
        }
        return removed
    }

    // Sifting moves a "hole" instead of swapping, writing each moved entry's index by its slot.

    private mutating func siftUp(from start: Int) {
        self.positions.withUnsafeMutableBufferPointer { positions in
            self.entries.withUnsafeMutableBufferPointer { buffer in
                let base = buffer.baseAddress!
                var hole = start
                let moving = base[hole]
                while hole > 0 {
                    let parent = (hole - 1) / 4
                    guard moving < base[parent] else { break }
                    base[hole] = base[parent]
                    positions[Int(base[hole].slot)] = Int32(truncatingIfNeeded: hole)
                    hole = parent
                }
                base[hole] = moving
                positions[Int(moving.slot)] = Int32(truncatingIfNeeded: hole)
            }
        }
    }

    private mutating func siftDown(from start: Int) {
        self.positions.withUnsafeMutableBufferPointer { positions in
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
                    positions[Int(base[hole].slot)] = Int32(truncatingIfNeeded: hole)
                    hole = child
                }
                base[hole] = moving
                positions[Int(moving.slot)] = Int32(truncatingIfNeeded: hole)
            }
        }
    }
}
