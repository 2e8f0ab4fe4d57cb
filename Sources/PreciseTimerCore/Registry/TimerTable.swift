/// The ID → node table of one registry shard: open addressing with linear probing over 8-byte
/// slots, each a node's address with the low 20 bits of its ID's hash packed beside it.
///
/// Why not `Dictionary<TimerID, TimerNode>`: at a million pending timers its removal shifts the
/// following entries back and rehashes each key to do so (SipHash over the string, a cache miss
/// per key), and its growth rehashes every key. Here the hash is computed once per call
/// (``TimerID/tableHash``) and its low bits are kept in the slot, so:
/// - a probe compares those bits in one contiguous buffer and reads a node only where they
///   match (``TimerNode/isNamed(_:hash:)``: for a generated ID, numbers and no string);
/// - a removal shifts slots back by their home, found from those bits, and skips that walk
///   while no slot is out of its home (``displaced``: the usual case for generated IDs);
/// - growth moves slots by those bits, never hashing a string, up to ``packedHashLimit`` slots (a
///   shard of 786 432 timers; a larger table reads each node's hash as it moves it).
///
/// Eight bytes, not sixteen with the whole hash: the table is a fifth of a pending timer's
/// memory. The address fits the 48 bits of a user-space address on 64-bit Linux (x86-64 with
/// four-level paging, arm64), and a node, allocated on a 16-byte boundary, leaves its low four
/// bits clear: 16 high bits and 4 low ones hold the hash bits (``Slot``).
///
/// The table owns one reference to each node it holds (+1 in ``insert(_:hash:)``, or the caller's
/// in ``insert(owned:hash:)``; given back by ``remove(_:hash:shrinking:)``,
/// ``removeOwned(nodeAt:hash:shrinking:)`` and ``remove(atSlot:)``, released by ``removeAll(_:)``
/// or in `deinit`, or handed over by ``abandonAll()``), so probing never retains or releases a
/// node, which would be a cache miss on its reference count.
///
/// A class, so that ``ShardState/cancelAll()`` can hand a whole table over in O(1) and its
/// nodes are released exactly once, wherever the last reference goes.
package final class TimerTable {
    /// One slot: 0 when empty; otherwise a node's address (bits 4–47, owned +1 by the table) with
    /// bits 0–3 of its ID's ``TimerID/tableHash`` in bits 0–3 and bits 4–19 in bits 48–63.
    private struct Slot {
        var word: UInt64

        static var empty: Slot { Slot(word: 0) }

        /// The slot of `node`, whose ID's hash is `hash`.
        @inline(__always)
        init(_ node: TimerNode, hash: UInt64) {
            let address = UInt64(UInt(bitPattern: Unmanaged.passUnretained(node).toOpaque()))
            precondition(
                address & ~Slot.addressMask == 0,
                "TimerTable: a node's address does not fit 48 bits on a 16-byte boundary")
            self.word = address | hash & 0xF | (hash >> 4 & 0xFFFF) << 48
        }

        @inline(__always)
        private init(word: UInt64) { self.word = word }

        static var addressMask: UInt64 { 0x0000_FFFF_FFFF_FFF0 }

        @inline(__always)
        var isEmpty: Bool { self.word == 0 }

        /// The low 20 bits of the node's ID's hash.
        @inline(__always)
        var hashBits: UInt64 { self.word & 0xF | (self.word >> 48) << 4 }

        /// The node's address (the slot not empty).
        @inline(__always)
        var address: UInt64 { self.word & Slot.addressMask }

        /// The node, borrowed: the table's reference keeps it alive.
        @inline(__always)
        var node: Unmanaged<TimerNode> {
            Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: UInt(self.address)).unsafelyUnwrapped)
        }
    }

    /// The largest table whose slots' homes the packed hash bits give: 2²⁰ slots.
    package static let packedHashLimit = 1 << 20

    /// The hash bits a slot keeps.
    private static var packedHashMask: UInt64 { UInt64(Self.packedHashLimit - 1) }

    /// Above this many slots a slot's home comes from its node's hash, not the packed bits:
    /// ``packedHashLimit``, or less in tests, to reach that path with a small table.
    private let homeFromBitsLimit: Int

    // Unchecked: every access is under the shard's semaphore (the registry's invariant).
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Slot>
    @exclusivity(unchecked) private var mask: Int
    @exclusivity(unchecked) package private(set) var count = 0
    /// How many nodes are not in their home slot (placed past it, or moved back short of it).
    /// While none is, a removal has nothing to shift back: no later slot can belong before the
    /// gap. A generated ID's home is its number's own slot (four numbers a line, groups spread by
    /// an odd multiplier), so a table of them stays at 0 while its live numbers span fewer groups
    /// than it has lines of slots: removals then end at once, without walking the run after them.
    @exclusivity(unchecked) private var displaced = 0

    /// The smallest table: 16 slots (128 bytes).
    private static let minimumCapacity = 16

    /// An empty table.
    ///
    /// - Parameter homeFromBitsLimit: For tests only: the largest table whose slots' homes come
    ///   from the packed hash bits (a power of two, at most ``packedHashLimit``).
    package init(homeFromBitsLimit: Int = TimerTable.packedHashLimit) {
        precondition(
            homeFromBitsLimit > 0 && homeFromBitsLimit <= Self.packedHashLimit
                && homeFromBitsLimit.nonzeroBitCount == 1,
            "TimerTable: homeFromBitsLimit is a power of two up to packedHashLimit")
        self.homeFromBitsLimit = homeFromBitsLimit
        self.slots = Self.allocate(Self.minimumCapacity)
        self.mask = Self.minimumCapacity - 1
    }

    /// Slots on 64-byte boundaries: a generated ID's group of four slots (see
    /// ``TimerID/tableHash(generatedNumber:)``) is within one cache line. A large table's slots
    /// are mapped (``PageMemory``), zero-filled: every slot empty.
    private static func allocate(_ capacity: Int) -> UnsafeMutablePointer<Slot> {
        let byteCount = capacity * MemoryLayout<Slot>.stride
        let slots = PageMemory.allocate(byteCount: byteCount, alignment: 64).bindMemory(
            to: Slot.self, capacity: capacity)
        if !PageMemory.isZeroFilled(byteCount: byteCount) {
            slots.initialize(repeating: .empty, count: capacity)
        }
        return slots
    }

    /// Gives back slots from ``allocate(_:)`` (the same `capacity`).
    private static func deallocate(_ slots: UnsafeMutablePointer<Slot>, capacity: Int) {
        PageMemory.deallocate(UnsafeMutableRawPointer(slots), byteCount: capacity * MemoryLayout<Slot>.stride)
    }

    deinit {
        for index in 0...self.mask where !self.slots[index].isEmpty {
            self.slots[index].node.release()
        }
        Self.deallocate(self.slots, capacity: self.mask + 1)
    }

    /// The node registered under `id`, whose ``TimerID/tableHash`` is `hash`.
    @inline(__always)
    package func find(_ id: TimerID, hash: UInt64) -> TimerNode? {
        self.index(of: id, hash: hash).map { self.slots[$0].node.takeUnretainedValue() }
    }

    /// The slot holding `id`, if any.
    @inline(__always)
    private func index(of id: TimerID, hash: UInt64) -> Int? {
        let bits = hash & Self.packedHashMask
        var index = Int(truncatingIfNeeded: hash) & self.mask
        while !self.slots[index].isEmpty {
            let slot = self.slots[index]
            if slot.hashBits == bits, slot.node._withUnsafeGuaranteedRef({ $0.isNamed(id, hash: hash) }) {
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
        let owned = Unmanaged.passRetained(node)
        guard let existing = self.insert(owned: owned, hash: hash) else { return nil }
        owned.release()
        return existing
    }

    /// ``insert(_:hash:)`` of a node whose reference the caller hands over: the table keeps it
    /// when it inserts the node (no retain), and leaves it to the caller when the ID is taken.
    @inline(__always)
    package func insert(owned: Unmanaged<TimerNode>, hash: UInt64) -> TimerNode? {
        let bits = hash & Self.packedHashMask
        let home = Int(truncatingIfNeeded: hash) & self.mask
        var index = home
        while !self.slots[index].isEmpty {
            let slot = self.slots[index]
            if slot.hashBits == bits,
                slot.node._withUnsafeGuaranteedRef({ existing in
                    owned._withUnsafeGuaranteedRef { existing.isNamed($0.id, hash: hash) }
                })
            {
                return slot.node.takeUnretainedValue()
            }
            index = (index + 1) & self.mask
        }
        self.slots[index] = owned._withUnsafeGuaranteedRef { Slot($0, hash: hash) }
        if index != home { self.displaced += 1 }
        self.count += 1
        if self.count * 4 > (self.mask + 1) * 3 {
            self.grow()
        }
        return nil
    }

    /// Removes `node` itself, registered under `hash`: found by identity, so no ID is built or
    /// compared (the loop ending a one-shot it fired holds the node already). Returns it (nil if
    /// the table does not hold it). A removal by ID is ``slot(of:hash:)`` then
    /// ``remove(atSlot:)``.
    ///
    /// - Parameter shrinking: Whether a table left sparse shrinks now. The loop passes `false` as
    ///   it ends the one-shots it fires and shrinks the table once it goes idle
    ///   (``shrinkIfSparse()``): a storm drains a table through several halvings.
    @discardableResult
    package func remove(_ node: TimerNode, hash: UInt64, shrinking: Bool = true) -> TimerNode? {
        let address = UInt(bitPattern: Unmanaged.passUnretained(node).toOpaque())
        return self.removeOwned(nodeAt: address, hash: hash, shrinking: shrinking)?.takeRetainedValue()
    }

    /// ``remove(_:hash:shrinking:)`` of the node at `address` (compared, never dereferenced), the
    /// table's reference handed to the caller as it is (the caller releases it, or moves it on
    /// with `takeRetainedValue()` where it is stored): a strong reference held across the caller's
    /// other calls would cost a retain and a release.
    package func removeOwned(nodeAt address: UInt, hash: UInt64, shrinking: Bool = true) -> Unmanaged<TimerNode>? {
        self.slot(ofNodeAt: address, hash: hash).map { self.removeOwned(at: $0.index, shrinking: shrinking) }
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

    /// The slot holding the node under `id`, and that node, borrowed: for a removal in two steps
    /// (``remove(atSlot:)``) with the caller's own work between them, during which the table must
    /// not change. `nil` if there is no such node.
    @inline(__always)
    package func slot(of id: TimerID, hash: UInt64) -> (index: Int, node: Unmanaged<TimerNode>)? {
        self.index(of: id, hash: hash).map { ($0, self.slots[$0].node) }
    }

    /// The slot holding the node at `address`, registered under `hash`, and that node, borrowed:
    /// found by identity, comparing slots and reading no node. `nil` if the table does not hold
    /// a node there: `address` may be stale (a handle's ``TimerHandle/location``), as it is
    /// compared, never dereferenced.
    @inline(__always)
    package func slot(ofNodeAt address: UInt, hash: UInt64) -> (index: Int, node: Unmanaged<TimerNode>)? {
        let target = UInt64(address)
        var index = Int(truncatingIfNeeded: hash) & self.mask
        while !self.slots[index].isEmpty {
            if self.slots[index].address == target { return (index, self.slots[index].node) }
            index = (index + 1) & self.mask
        }
        return nil
    }

    /// Removes the node in slot `index` (from ``slot(of:hash:)`` or ``slot(ofNodeAt:hash:)``,
    /// the table unchanged since);
    /// returns it.
    @inline(__always)
    package func remove(atSlot index: Int) -> TimerNode {
        self.remove(at: index)
    }

    /// The slot where a look-up of the node in `slot` starts, in slots of `mask`: from the
    /// packed hash bits, or, in a table larger than they cover, from the node's own hash.
    @inline(__always)
    private func home(of slot: Slot, mask: Int) -> Int {
        if mask < self.homeFromBitsLimit {
            return Int(truncatingIfNeeded: slot.hashBits) & mask
        }
        return Int(truncatingIfNeeded: slot.node._withUnsafeGuaranteedRef { $0.hash }) & mask
    }

    /// Removes the slot at `index`, closing the gap behind it (``removeOwned(at:shrinking:)``).
    @inline(__always)
    private func remove(at index: Int, shrinking: Bool = true) -> TimerNode {
        self.removeOwned(at: index, shrinking: shrinking).takeRetainedValue()
    }

    /// ``remove(at:shrinking:)``, the table's reference handed over as it is. Inlined: with no
    /// slot out of its home (``displaced``), the removal is one store.
    @inline(__always)
    private func removeOwned(at index: Int, shrinking: Bool = true) -> Unmanaged<TimerNode> {
        let node = self.slots[index].node
        if self.displaced == 0 {
            self.slots[index] = .empty
        } else {
            self.closeGap(at: index)
        }
        self.count -= 1
        // Sparse (an eighth full): half the slots, so a registry drained one timer at a time gives
        // its peak memory back (a quarter full after, far from growing again).
        if shrinking, self.isSparse {
            self.resize(to: (self.mask + 1) / 2)
        }
        return node
    }

    /// Empties the slot at `index` and closes the gap: later slots of the same probe run move
    /// back when their home is not after the gap (by their packed hash bits, no string is hashed).
    /// Only a displaced slot can move, so the walk ends once none is left (``displaced``).
    @inline(never)
    private func closeGap(at index: Int) {
        if self.home(of: self.slots[index], mask: self.mask) != index {
            self.displaced -= 1
        }
        var gap = index
        var next = (index + 1) & self.mask
        while self.displaced != 0, !self.slots[next].isEmpty {
            let home = self.home(of: self.slots[next], mask: self.mask)
            // The slot may move to the gap if its home is cyclically outside (gap, next]; then it
            // was displaced, and is no longer if the gap is its home.
            let distanceToNext = (next &- home) & self.mask
            let distanceToGap = (gap &- home) & self.mask
            if distanceToGap < distanceToNext {
                self.slots[gap] = self.slots[next]
                if distanceToGap == 0 { self.displaced -= 1 }
                gap = next
            }
            next = (next + 1) & self.mask
        }
        self.slots[gap] = .empty
    }

    /// The number of slots (for tests: a drained table gives its memory back).
    package var capacity: Int { self.mask + 1 }

    /// Doubles the slots.
    private func grow() {
        self.resize(to: (self.mask + 1) * 2)
    }

    /// Moves every node into `capacity` slots (a power of two, above `count`), by its home.
    private func resize(to capacity: Int) {
        let oldSlots = self.slots
        let oldCapacity = self.mask + 1
        self.slots = Self.allocate(capacity)
        self.mask = capacity - 1
        self.displaced = 0
        for old in 0..<oldCapacity where !oldSlots[old].isEmpty {
            let home = self.home(of: oldSlots[old], mask: self.mask)
            var index = home
            while !self.slots[index].isEmpty { index = (index + 1) & self.mask }
            self.slots[index] = oldSlots[old]
            if index != home { self.displaced += 1 }
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
        self.displaced = 0
    }

    /// Calls `body` with every node, then lets go of it, leaving the table empty: one pass, so a
    /// node cold in memory is fetched once, not once to clear it and once more to free it.
    package func removeAll(_ body: (TimerNode) -> Void) {
        for index in 0...self.mask where !self.slots[index].isEmpty {
            let node = self.slots[index].node
            self.slots[index] = .empty
            node._withUnsafeGuaranteedRef(body)
            node.release()
        }
        self.count = 0
        self.displaced = 0
    }

    /// The count of nodes out of their home slot the table keeps (``displaced``), and the same
    /// count made by looking at every slot. O(n), for the invariant checks of tests.
    package var displacedCounts: (kept: Int, counted: Int) {
        var counted = 0
        for index in 0...self.mask where !self.slots[index].isEmpty {
            if self.home(of: self.slots[index], mask: self.mask) != index { counted += 1 }
        }
        return (self.displaced, counted)
    }

    /// Calls `body` with every node (in no particular order).
    package func forEachNode(_ body: (TimerNode) -> Void) {
        for index in 0...self.mask where !self.slots[index].isEmpty {
            self.slots[index].node._withUnsafeGuaranteedRef(body)
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
    /// exactly when their numbers are, so the table compares no string for them (a node's own
    /// hash, computed from its number: ``TimerNode/isNamed(_:hash:)``).
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
