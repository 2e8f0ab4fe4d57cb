/// A 4-ary min-heap of pending timers ordered by deadline, then by the order they were armed,
/// so timers due at the same instant fire in scheduling order (libevent's own min-heap compares
/// deadlines only and is not stable, which is one reason the engine keeps its own).
///
/// Keys live in the array, not in the nodes, so sifting touches one contiguous buffer; four
/// children per parent halve the depth of a binary heap (a pop of a million entries crosses 10
/// levels, not 20), and the four children sit in adjacent cache lines.
/// Cancelled nodes are not removed here (that would cost O(log n) of scattered writes per
/// cancel, pause or reschedule); the registry counts such stale entries as garbage and calls
/// ``compact()`` once they outnumber the live ones, which keeps memory bounded and those
/// operations O(1) amortized (a reschedule adds one O(log n) push).
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
    package var isEmpty: Bool { self.entries.isEmpty }
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

    package mutating func removeAll() {
        self.entries.removeAll()
    }

    /// Drops every entry that is no longer live, then restores heap order in O(n).
    package mutating func compact() {
        self.entries.removeAll { !$0.isLive }
        var index = (self.entries.count + 2) / 4
        while index > 0 {
            index -= 1
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
