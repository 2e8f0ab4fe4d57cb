/// The ID → node table of one registry shard: open addressing with linear probing over 16-byte
/// slots that keep each ID's full hash beside its node.
///
/// Why not `Dictionary<TimerID, TimerNode>`: at a million pending timers its removal shifts the following entries back and rehashes each
/// key to do so (SipHash over the string, a cache miss per key), and its growth rehashes every
/// key. Here the hash is computed once per call (``TimerID/tableHash``) and stored, so a probe
/// compares 8-byte hashes in one contiguous buffer and touches a node only on a hash match (never,
/// for a generated ID, whose hash is exact), a
/// removal shifts slots back by their stored hash, and growth never hashes a string.
///
/// The table owns one reference to each node it holds (`Unmanaged`: +1 in ``insert(_:hash:)``,
/// given back by ``remove(_:hash:)``, released by ``removeAll(_:)`` or in `deinit`, or handed
/// over by ``abandonAll()``), so probing never retains or releases a node, which would be a
/// cache miss on its reference count.
///
/// A class, so that ``ShardState/cancelAll()`` can hand a whole table over in O(1) and its
/// nodes are released exactly once, wherever the last reference goes.
package final class TimerTable {
    private struct Slot {
        /// The ID's ``TimerID/tableHash``; meaningless when `node` is nil.
        var hash: UInt64
        /// nil: empty. +1 owned by the table.
        var node: Unmanaged<TimerNode>?
    }

    // Unchecked: every access is under the shard's semaphore (the registry's invariant).
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Slot>
    @exclusivity(unchecked) private var mask: Int
    @exclusivity(unchecked) package private(set) var count = 0

    /// The smallest table: 16 slots (256 bytes).
    private static let minimumCapacity = 16

    package init() {
        self.slots = Self.allocate(Self.minimumCapacity)
        self.mask = Self.minimumCapacity - 1
    }

    /// Slots on 64-byte boundaries: a generated ID's group of four slots (see
    /// ``TimerID/tableHash(generatedNumber:)``) is one cache line. A large table's slots are
    /// mapped (``PageMemory``), zero-filled: every slot empty.
    private static func allocate(_ capacity: Int) -> UnsafeMutablePointer<Slot> {
        let byteCount = capacity * MemoryLayout<Slot>.stride
        let slots = PageMemory.allocate(byteCount: byteCount, alignment: 64).bindMemory(
            to: Slot.self, capacity: capacity)
        if !PageMemory.isZeroFilled(byteCount: byteCount) {
            slots.initialize(repeating: Slot(hash: 0, node: nil), count: capacity)
        }
        return slots
    }

    /// Gives back slots from ``allocate(_:)`` (the same `capacity`).
    private static func deallocate(_ slots: UnsafeMutablePointer<Slot>, capacity: Int) {
        PageMemory.deallocate(UnsafeMutableRawPointer(slots), byteCount: capacity * MemoryLayout<Slot>.stride)
    }

    deinit {
        for index in 0...self.mask {
            self.slots[index].node?.release()
        }
        Self.deallocate(self.slots, capacity: self.mask + 1)
    }

    /// The node registered under `id`, whose ``TimerID/tableHash`` is `hash`.
    @inline(__always)
    package func find(_ id: TimerID, hash: UInt64) -> TimerNode? {
        self.index(of: id, hash: hash).map { self.slots[$0].node!.takeUnretainedValue() }
    }

    /// The slot holding `id`, if any.
    @inline(__always)
    private func index(of id: TimerID, hash: UInt64) -> Int? {
        var index = Int(truncatingIfNeeded: hash) & self.mask
        while let node = self.slots[index].node {
            if self.slots[index].hash == hash,
                hash & TimerID.generatedHashBit != 0 || node._withUnsafeGuaranteedRef({ $0.id == id })
            {
                return index
            }
            index = (index + 1) & self.mask
        }
        return nil
    }

    /// Where the slots are and how many (a mask), for ``TimerShard`` to publish: a caller about
    /// to take the lock hints the slot it will probe, so the miss overlaps its other work.
    package var slotLayout: (base: UInt, mask: UInt) { (UInt(bitPattern: self.slots), UInt(self.mask)) }

    /// The address of the slot where a look-up of `hash` starts, for prefetching only.
    @inline(__always)
    package func slotAddress(hash: UInt64) -> UInt {
        Self.slotAddress(hash: hash, in: self.slotLayout)
    }

    /// The address of the slot where a look-up of `hash` starts in slots laid out as `layout`
    /// (``slotLayout``, perhaps published a while ago: the result is a hint, never dereferenced).
    @inline(__always)
    package static func slotAddress(hash: UInt64, in layout: (base: UInt, mask: UInt)) -> UInt {
        layout.base &+ (UInt(truncatingIfNeeded: hash) & layout.mask) &* UInt(MemoryLayout<Slot>.stride)
    }

    /// Inserts `node` under its ID unless that ID is taken; returns the node already registered
    /// under it, in which case nothing changed.
    package func insert(_ node: TimerNode, hash: UInt64) -> TimerNode? {
        var index = Int(truncatingIfNeeded: hash) & self.mask
        while let existing = self.slots[index].node {
            if self.slots[index].hash == hash,
                hash & TimerID.generatedHashBit != 0 || existing._withUnsafeGuaranteedRef({ $0.id == node.id })
            {
                return existing.takeUnretainedValue()
            }
            index = (index + 1) & self.mask
        }
        self.slots[index] = Slot(hash: hash, node: .passRetained(node))
        self.count += 1
        if self.count * 4 > (self.mask + 1) * 3 {
            self.grow()
        }
        return nil
    }

    /// Removes the node under `id`; returns it (nil if there was none).
    ///
    /// - Parameter shrinking: Whether a table left sparse shrinks now. The loop passes `false` as
    ///   it ends the one-shots it fires and shrinks the table once it goes idle
    ///   (``shrinkIfSparse()``): a storm drains a table through several halvings, and freeing the
    ///   larger of them made glibc consolidate the storm's freed nodes while handlers waited.
    @discardableResult
    package func remove(_ id: TimerID, hash: UInt64, shrinking: Bool = true) -> TimerNode? {
        self.index(of: id, hash: hash).map { self.remove(at: $0, shrinking: shrinking) }
    }

    /// Removes `node` itself, registered under `hash`: found by identity, so no ID is copied or
    /// compared (the loop ending a one-shot it fired holds the node already). Returns it (nil if
    /// the table does not hold it).
    ///
    /// - Parameter shrinking: As for ``remove(_:hash:shrinking:)``.
    @discardableResult
    package func remove(_ node: TimerNode, hash: UInt64, shrinking: Bool = true) -> TimerNode? {
        let target = Unmanaged.passUnretained(node).toOpaque()
        var index = Int(truncatingIfNeeded: hash) & self.mask
        while let held = self.slots[index].node {
            if held.toOpaque() == target { return self.remove(at: index, shrinking: shrinking) }
            index = (index + 1) & self.mask
        }
        return nil
    }

    /// Whether the table is sparse (less than an eighth full, above its smallest size): a removal
    /// that shrinks would have shrunk it.
    package var isSparse: Bool {
        self.mask + 1 > Self.minimumCapacity && self.count * 8 < self.mask + 1
    }

    /// Halves the table while it is sparse (a removal that did not shrink it left it so).
    package func shrinkIfSparse() {
        var capacity = self.mask + 1
        while capacity > Self.minimumCapacity, self.count * 8 < capacity { capacity /= 2 }
        if capacity != self.mask + 1 { self.resize(to: capacity) }
    }

    /// Removes the node under `id` if `condition` holds for it, in one look-up; returns it (nil
    /// if there was none or the condition failed, in which case nothing changed).
    @inline(__always)
    package func remove(_ id: TimerID, hash: UInt64, if condition: (TimerNode) -> Bool) -> TimerNode? {
        guard let index = self.index(of: id, hash: hash),
            self.slots[index].node!._withUnsafeGuaranteedRef(condition)
        else { return nil }
        return self.remove(at: index)
    }

    /// Removes the slot at `index` and closes the gap: later slots of the same probe run move
    /// back when their home is not after the gap (by their stored hash, no string is hashed).
    private func remove(at index: Int, shrinking: Bool = true) -> TimerNode {
        let node = self.slots[index].node!.takeRetainedValue()
        var gap = index
        var next = (index + 1) & self.mask
        while self.slots[next].node != nil {
            let home = Int(truncatingIfNeeded: self.slots[next].hash) & self.mask
            // The slot may move to the gap if its home is cyclically outside (gap, next].
            let distanceToNext = (next &- home) & self.mask
            let distanceToGap = (gap &- home) & self.mask
            if distanceToGap < distanceToNext {
                self.slots[gap] = self.slots[next]
                gap = next
            }
            next = (next + 1) & self.mask
        }
        self.slots[gap] = Slot(hash: 0, node: nil)
        self.count -= 1
        // Sparse (an eighth full): half the slots, so a registry drained one timer at a time gives
        // its peak memory back (a quarter full after, far from growing again).
        if shrinking, self.isSparse {
            self.resize(to: (self.mask + 1) / 2)
        }
        return node
    }

    /// The number of slots (for tests: a drained table gives its memory back).
    package var capacity: Int { self.mask + 1 }

    /// Doubles the slots.
    private func grow() {
        self.resize(to: (self.mask + 1) * 2)
    }

    /// Moves every node into `capacity` slots (a power of two, above `count`), by its stored hash.
    private func resize(to capacity: Int) {
        let oldSlots = self.slots
        let oldCapacity = self.mask + 1
        self.slots = Self.allocate(capacity)
        self.mask = capacity - 1
        for old in 0..<oldCapacity {
            guard oldSlots[old].node != nil else { continue }
            var index = Int(truncatingIfNeeded: oldSlots[old].hash) & self.mask
            while self.slots[index].node != nil { index = (index + 1) & self.mask }
            self.slots[index] = oldSlots[old]
        }
        Self.deallocate(oldSlots, capacity: oldCapacity)
    }

    /// Hands the table's reference to each of its nodes over to the caller, who releases each
    /// exactly once, and frees the slots: the table is left empty, touching no node.
    package func abandonAll() {
        Self.deallocate(self.slots, capacity: self.mask + 1)
        self.slots = Self.allocate(Self.minimumCapacity)
        self.mask = Self.minimumCapacity - 1
        self.count = 0
    }

    /// Calls `body` with every node, then lets go of it, leaving the table empty: one pass, so a
    /// node cold in memory is fetched once, not once to clear it and once more to free it.
    package func removeAll(_ body: (TimerNode) -> Void) {
        for index in 0...self.mask {
            guard let node = self.slots[index].node else { continue }
            self.slots[index] = Slot(hash: 0, node: nil)
            node._withUnsafeGuaranteedRef(body)
            node.release()
        }
        self.count = 0
    }

    /// Calls `body` with every node (in no particular order).
    package func forEachNode(_ body: (TimerNode) -> Void) {
        for index in 0...self.mask {
            if let node = self.slots[index].node {
                node._withUnsafeGuaranteedRef(body)
            }
        }
    }
}

extension TimerID {
    /// The hash that picks a timer's shard (its top six bits) and its table slot (its low bits).
    ///
    /// - An ID of any other form: Swift's seeded SipHash of the string, so IDs chosen by a remote
    ///   peer cannot be crafted to collide, with ``generatedHashBit`` cleared.
    /// - A generated ID in its canonical form (`timer-` and the number without leading zeros):
    ///   ``tableHash(generatedNumber:)``, computed from the number, no string hashed. Only a
    ///   service makes IDs of that form (an explicit one throws
    ///   ``PreciseTimerError/Code/reservedID``), so nobody outside can make them collide.
    ///
    /// Computed once per call.
    @inline(__always)
    package var tableHash: UInt64 {
        if let number = self.canonicalGeneratedNumber, let hash = Self.tableHash(generatedNumber: number) {
            return hash
        }
        return UInt64(bitPattern: Int64(self.rawValue.hashValue)) & ~Self.generatedHashBit
    }

    /// Set in the ``tableHash`` of a generated ID, and only there: two such hashes are equal
    /// exactly when their numbers are, so the table compares no string for them (and so never
    /// reads a node to find one).
    package static let generatedHashBit: UInt64 = 1 << 57

    /// The ``tableHash`` of `timer-<number>`; `nil` at 2⁶¹ and beyond, where the number no longer
    /// fits (such an ID is hashed as a string).
    ///
    /// The shard is the number's low six bits, so a service's consecutive timers go round the
    /// shards. Within a shard, four of its consecutive numbers (64 apart) take four adjacent slots
    /// (a 64-byte line: one cache miss for four timers scheduled, or cancelled, in order) and each
    /// group of four starts at its index times an odd constant, a bijection of the slot bits: the
    /// groups of a run of consecutive numbers never share a home slot, however many there are
    /// below the table's size. Low bits to high: two in the group, 53 for the group, two zero
    /// bits, the marker (bit 57), the six shard bits (``TimerCore/shardShift``).
    @inline(__always)
    package static func tableHash(generatedNumber number: UInt64) -> UInt64? {
        guard number < 1 << 61 else { return nil }
        let shardMask = UInt64(TimerCore.shardCount - 1)
        let inShard = number >> UInt64(TimerCore.shardCount.trailingZeroBitCount)
        let group = ((inShard >> 2) &* Self.groupStep) & Self.groupMask
        return (number & shardMask) << TimerCore.shardShift | Self.generatedHashBit | group << 2 | (inShard & 3)
    }

    /// The ``tableHash(generatedNumber:)`` of the number `4 × shardCount` after the one whose hash
    /// is `hash`, a generated ID's: the same shard and place in the group, the next group of four
    /// (its group number plus one, times the odd constant). Computed from the hash alone, for
    /// prefetching the line that timers scheduled, or cancelled, in the order of their numbers
    /// need next. Past 2⁶¹ (where the number has no such hash) the result names no timer, which
    /// is harmless for a hint.
    @inline(__always)
    package static func tableHash(nextGroupAfter hash: UInt64) -> UInt64 {
        let group = (hash >> 2) & Self.groupMask
        return hash & ~(Self.groupMask << 2) | ((group &+ Self.groupStep) & Self.groupMask) << 2
    }

    /// A group's place in the slot bits is its index times this odd constant (a bijection).
    private static var groupStep: UInt64 { 0x9E37_79B9_7F4A_7C15 }
    /// The 53 bits of a generated hash that hold the group.
    private static var groupMask: UInt64 { (1 << 53) - 1 }
}
