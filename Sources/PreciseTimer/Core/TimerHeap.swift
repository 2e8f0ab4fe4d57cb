/// A binary min-heap of pending timers ordered by deadline, then by the order they were armed,
/// so timers due at the same instant fire in scheduling order (libevent's own min-heap compares
/// deadlines only and is not stable, which is one reason the engine keeps its own).
///
/// Keys live in the array, not in the nodes, so sifting touches one contiguous buffer.
/// Cancelled nodes are not removed here (that would cost O(log n) of scattered writes per
/// cancel); the registry counts them as garbage and calls ``compact()`` once they outnumber the
/// live entries, which keeps memory bounded and cancellation O(1) amortized.
package struct TimerHeap {
    package struct Entry {
        package var deadline: Int64
        package var sequence: UInt64
        package var node: TimerNode

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

    /// Drops every entry whose node `isGarbage` says is dead, then restores heap order in O(n).
    package mutating func compact(isGarbage: (TimerNode) -> Bool) {
        self.entries.removeAll { isGarbage($0.node) }
        var index = self.entries.count / 2
        while index > 0 {
            index -= 1
            self.siftDown(from: index)
        }
    }

    private mutating func siftUp(from start: Int) {
        self.entries.withUnsafeMutableBufferPointer { buffer in
            var child = start
            let moving = buffer[child]
            while child > 0 {
                let parent = (child - 1) / 2
                guard moving < buffer[parent] else { break }
                buffer[child] = buffer[parent]
                child = parent
            }
            buffer[child] = moving
        }
    }

    private mutating func siftDown(from start: Int) {
        self.entries.withUnsafeMutableBufferPointer { buffer in
            let count = buffer.count
            var parent = start
            let moving = buffer[parent]
            while true {
                var child = 2 * parent + 1
                guard child < count else { break }
                if child + 1 < count, buffer[child + 1] < buffer[child] { child += 1 }
                guard buffer[child] < moving else { break }
                buffer[parent] = buffer[child]
                parent = child
            }
            buffer[parent] = moving
        }
    }
}
