/// A 4-ary min-heap of pending timers ordered by deadline, then by the order they were armed,
/// so timers due at the same instant fire in scheduling order (libevent's own min-heap compares
/// deadlines only and is not stable, which is one reason the engine keeps its own).
///
/// Keys live in the array, not in the nodes, so sifting touches one contiguous buffer; four
/// children per parent halve the depth of a binary heap (a pop of a million entries crosses 10
/// levels, not 20), and the four children sit in adjacent cache lines.
/// Cancelled nodes are not removed here (that would cost O(log n) of scattered writes per
/// cancel, pause or reschedule); the registry counts such stale entries as garbage and, once
/// they outnumber the live ones, removes a few with ``removeStale(scanning:)`` at every
/// operation that adds one: memory stays bounded and no operation holds the lock for O(n).
package struct TimerHeap {
    package struct Entry {
        package var deadline: Int64
        package var sequence: UInt64
        /// The node's ``TimerNode/epoch`` when this entry was pushed: the entry is live only while
        /// the node is pending with the same epoch.
        package var epoch: UInt32
        package var node: TimerNode

        /// Whether this entry still stands for its node's next deadline.
        @inline(__always)
        package var isLive: Bool { self.node.state == .pending && self.node.epoch == self.epoch }

        @inline(__always)
        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.sequence < rhs.sequence
        }
    }

    private var entries: ContiguousArray<Entry> = []

    package init() {}

    package var count: Int { self.entries.count }
    package var min: Entry? { self.entries.first }

    package mutating func insert(_ entry: Entry) {
        self.entries.append(entry)
        self.siftUp(from: self.entries.count - 1)
    }

    @discardableResult
    package mutating func removeMin() -> Entry? {
        guard let last = self.entries.popLast() else { return nil }
        guard !self.entries.isEmpty else { return last }
        let first = self.entries[0]
        self.entries[0] = last
        self.siftDown(from: 0)
        return first
    }

    /// Entries ``removeStale(scanning:)`` looks at per call: with more than half of them stale,
    /// a call removes more than the one stale entry the operation that triggered it added.
    package static let sweepBudget = 8

    /// Where the incremental sweep goes on from (it walks the array from the end).
    private var sweepCursor = 0

    /// Looks at up to `budget` entries, moving down the array from where the previous call
    /// stopped, and removes the stale ones. Returns how many it removed.
    package mutating func removeStale(scanning budget: Int) -> Int {
        var removed = 0
        for _ in 0..<budget {
            guard !self.entries.isEmpty else { break }
            if self.sweepCursor <= 0 || self.sweepCursor >= self.entries.count {
                self.sweepCursor = self.entries.count
            }
            self.sweepCursor -= 1
            if !self.entries[self.sweepCursor].isLive {
                self.remove(at: self.sweepCursor)
                removed += 1
            }
        }
        return removed
    }

    /// Removes the entry at `index`: the last entry takes its place and sifts to where it belongs.
    private mutating func remove(at index: Int) {
        let last = self.entries.removeLast()
        guard index < self.entries.count else { return }
        self.entries[index] = last
        if index > 0, last < self.entries[(index - 1) / 4] {
            self.siftUp(from: index)
        } else {
            self.siftDown(from: index)
        }
    }

    // Sifting moves a "hole" instead of swapping: entries are moved bitwise, so a node's
    // reference count (a cache miss on a cold node) is never touched on the way.

    private mutating func siftUp(from start: Int) {
        self.entries.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            var hole = start
            let moving = (base + hole).move()
            while hole > 0 {
                let parent = (hole - 1) / 4
                guard moving < base[parent] else { break }
                (base + hole).moveInitialize(from: base + parent, count: 1)
                hole = parent
            }
            (base + hole).initialize(to: moving)
        }
    }

    private mutating func siftDown(from start: Int) {
        self.entries.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            let count = buffer.count
            var hole = start
            let moving = (base + hole).move()
            while true {
                let first = 4 * hole + 1
                guard first < count else { break }
                var child = first
                for candidate in (first + 1)..<Swift.min(first + 4, count) where base[candidate] < base[child] {
                    child = candidate
                }
                guard base[child] < moving else { break }
                (base + hole).moveInitialize(from: base + child, count: 1)
                hole = child
            }
            (base + hole).initialize(to: moving)
        }
    }
}
