import HeapModule

/// The earliest deadline of a shard's pending timers on the wall clock and on the continuous
/// clock, kept in O(log n) per change: what an engine arms its `CLOCK_REALTIME` and
/// `CLOCK_BOOTTIME` timerfds at after every change to such a timer.
///
/// A heap per clock, with lazy deletion: each time a bound timer goes (back) into the shard's
/// heap, an entry with its true deadline on its own clock is added; an entry is stale once its
/// timer is no longer pending there at that deadline, and is dropped when it reaches the top.
/// Entries name the timer by identity, not by reference, so a stale entry keeps nothing of an
/// ended timer alive (its schedule is user code, released when the timer ends). When stale
/// entries outnumber live ones, the heaps are rebuilt from the live timers: amortized O(1) per
/// change, since as many changes came before.
struct BoundDeadlines {
    struct Entry: Comparable {
        let deadline: Int64
        let node: ObjectIdentifier

        static func < (lhs: Entry, rhs: Entry) -> Bool { (lhs.deadline, lhs.node) < (rhs.deadline, rhs.node) }
    }

    private var wall = Heap<Entry>()
    private var continuous = Heap<Entry>()
    /// Entries added or looked at since the shard was created: the work done, which a test
    /// counts (on virtual time, seconds measure nothing).
    private(set) var work = 0

    /// The true deadline of a bound timer on its own clock (see ``ClockBinding``).
    static func deadline(of node: TimerNode, _ clock: ClockBinding) -> Int64 {
        switch clock.kind {
        case .wall: clock.anchor
        case .continuous: saturatingAdd(node.deadline, clock.anchor)
        }
    }

    /// A bound timer went into the shard's heap (a schedule, re-arm, move or re-estimate).
    mutating func noteInserted(_ node: TimerNode, bound: [ObjectIdentifier: TimerNode]) {
        guard let clock = node.clock else { return }
        let entry = Entry(deadline: Self.deadline(of: node, clock), node: ObjectIdentifier(node))
        self.work += 1
        switch clock.kind {
        case .wall: self.wall.insert(entry)
        case .continuous: self.continuous.insert(entry)
        }
        if self.wall.count + self.continuous.count > 2 * bound.count + 64 {
            self.rebuild(from: bound)
        }
    }

    /// The earliest deadline of a pending timer on each clock; drops the stale entries on top.
    mutating func earliest(in bound: [ObjectIdentifier: TimerNode]) -> (wall: Int64?, continuous: Int64?) {
        (Self.top(of: &self.wall, bound, &self.work), Self.top(of: &self.continuous, bound, &self.work))
    }

    /// Forgets every entry (the shard swapped its timers out).
    mutating func removeAll() {
        self.wall = Heap()
        self.continuous = Heap()
    }

    private static func top(
        of heap: inout Heap<Entry>, _ bound: [ObjectIdentifier: TimerNode], _ work: inout Int
    ) -> Int64? {
        while let entry = heap.min {
            work += 1
            if let node = bound[entry.node], node.state == .pending, let clock = node.clock,
                Self.deadline(of: node, clock) == entry.deadline
            {
                return entry.deadline
            }
            heap.removeMin()
        }
        return nil
    }

    private mutating func rebuild(from bound: [ObjectIdentifier: TimerNode]) {
        var wall: [Entry] = []
        var continuous: [Entry] = []
        for (identifier, node) in bound where node.state == .pending {
            guard let clock = node.clock else { continue }
            let entry = Entry(deadline: Self.deadline(of: node, clock), node: identifier)
            switch clock.kind {
            case .wall: wall.append(entry)
            case .continuous: continuous.append(entry)
            }
        }
        self.work += bound.count
        self.wall = Heap(wall)
        self.continuous = Heap(continuous)
    }
}
