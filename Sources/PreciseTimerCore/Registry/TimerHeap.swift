/// A 4-ary min-heap of one shard's pending timers, ordered by deadline, then by scheduling order,
/// so timers due at the same instant fire in scheduling order (libevent's own min-heap compares
/// deadlines only and is not stable, which is one reason the engine keeps its own).
///
/// Keys live in the array, not in the nodes, so comparisons touch one contiguous buffer; four
/// children per parent halve the depth of a binary heap, and the four children sit in adjacent
/// cache lines. Each node knows its index (``TimerNode/heapIndex``), so a cancel, pause or
/// earlier reschedule takes its entry out at once: no stale entry keeps a cancelled node (and its
/// memory) alive, and nothing needs compacting later. That costs one write into each node an
/// operation moves, which with a per-shard heap is a level or two for a removal. A later
/// reschedule leaves the entry where it is, early (see ``remove(_:)`` and
/// ``ShardState/settleHead()``).
///
/// Entries do not retain their node: a node is in the heap only while it is pending, and a
/// pending node is always held by its shard's ``TimerTable`` (which gives it up only after the
/// registry took it out of the heap, or together with the heap in ``ShardState/cancelAll()``).
/// So sifting never touches a reference count.
///
/// Most of a large shard's timers are far off (sessions that expire in minutes, daily jobs), and
/// for them the heap's order is work done too early: a sift on every insert and removal, each
/// level a cache line and an index written into a cold node. Once the heap holds
/// ``minimumSplit`` entries, the later ones go to a *far tier* behind a bound: an unordered
/// array where filing a timer is an append and removing one sets a bit in a bitmap of dead
/// entries, without touching the entry, or, next to the previous removal, swaps the last entry
/// into its place (see ``farDead`` and ``removeFar(at:)``; the kernel's split between its timer
/// wheel and its hrtimers, with one coarse level). The heap keeps
/// about an eighth; when it and the due run are empty, the far tier's earliest entries come back
/// (``refillIfDrained()``). The earliest entry is never in the far tier, so ``min`` reads only
/// the heap and the run.
///
/// A storm (most of a shard's timers due at once, as sessions created together expire together)
/// is served from a *due run* instead of by popping the heap one entry at a time: each pop sifts
/// an entry down through every level, reading four children per level and writing the index of
/// every entry it moves into that entry's node, a cache miss per level on cold nodes.
/// ``gatherDue(notAfter:)`` moves
/// every due entry into the run in one pass over the array, sorts it, and the run is then
/// consumed front to back, touching no node but the one it hands out. The run is part of the
/// heap for every caller: ``min``, ``removeMin()``, ``remove(_:)``, ``count`` and
/// ``forEachEntry(_:)`` see both.
package struct TimerHeap {
    package struct Entry: BitwiseCopyable {
        package var deadline: Int64
        package var sequence: UInt64
        package var node: Unmanaged<TimerNode>

        package init(deadline: Int64, sequence: UInt64, node: Unmanaged<TimerNode>) {
            self.deadline = deadline
            self.sequence = sequence
            self.node = node
        }

        @inline(__always)
        static func < (lhs: Entry, rhs: Entry) -> Bool {
            FiringOrder.precedes((lhs.deadline, lhs.sequence), (rhs.deadline, rhs.sequence))
        }
    }

    /// An entry of the due run; `isLive` is false once its node was removed (cancelled, paused
    /// or rescheduled while in the run). A removed entry keeps its key, so the run stays sorted
    /// and searchable.
    private struct RunEntry {
        var entry: Entry
        var isLive = true
    }

    private var entries: TierArray = []
    /// The far tier: entries whose deadline is at or after ``farBound``, unordered. A node here
    /// holds its place as ``farIndex(_:)`` (-2 and below) in its ``TimerNode/heapIndex``.
    /// Invariants: every entry of the heap and the run is before `farBound`, every far entry at
    /// or after it (so the earliest entry is never here); the far tier is empty unless the heap
    /// or the run holds an entry; `farBound` is `.max` exactly when the far tier is empty.
    private var far: TierArray = []
    private var farBound = Int64.max
    /// The heap's size at which ``split()`` moves its later entries to the far tier (raised after
    /// each split, so splitting is amortized O(1) per insert even when nothing can move).
    private var splitAt = Self.minimumSplit
    /// Due entries gathered out of `entries` (``gatherDue(notAfter:)``), in firing order, consumed
    /// from `runStart`. Invariant: `run[runStart]` is live whenever `runStart < run.count`, and
    /// the run is empty (no storage) once every entry is consumed or removed.
    private var run: ContiguousArray<RunEntry> = []
    private var runStart = 0
    /// The live entries of the run.
    private var runCount = 0
    /// Pops to let pass before ``gatherDue(notAfter:)`` counts the due entries again, after a
    /// count that found too few (so a heap with a few due entries among many is not counted at
    /// every pop: the count costs about what the pops it covers cost).
    private var gatherCredit = 0
    /// The far entries taken out and not yet dropped (their nodes gone, perhaps freed: never read
    /// through them). ``compactFar()`` drops them once they are as many as the live ones, and a
    /// refill those that come near. Invariant: the far tier is empty when every entry in it is
    /// dead. Stored last: only a far removal and a refill read it, and a call's other fields stay
    /// in fewer cache lines.
    private var farDead = DeadEntries()
    /// The far index of the last removal (see ``removeFar(at:)``).
    private var previousFarRemoval = Int.min / 2

    /// Entries fewer than this are popped one by one: a run would not pay for its sort.
    static let minimumRun = 32
    /// Storage (in entries) below which a sparse heap keeps its capacity.
    static let shrinkThreshold = 1_024
    /// The smallest heap ``split()`` splits: below it, a sift is a few levels of one or two
    /// cache lines and a far tier would not pay for its scans.
    static let minimumSplit = 1_024
    /// The fewest entries a split leaves in the heap and a refill brings back to it.
    static let nearTarget = 256
    /// The most entries a refill aims to bring back (it runs under the shard's lock, and writes
    /// an index into each node it moves): half of ``maximumGather``, so a refilled heap can
    /// still serve a storm from a due run.
    static let maximumRefill = 1_024
    /// How far after the heap's earliest entry a split's bound must be (1 ms): timers closer
    /// together than that are due together, and the heap serves them best.
    static let minimumFarSpan: Int64 = 1_000_000

    package init() {}

    /// Pending timers: the heap's entries, the run's live ones and the far tier's.
    package var count: Int { self.entries.count + self.runCount + self.far.count - self.farDead.count }

    /// The live entries of the far tier (tests).
    package var farCount: Int { self.far.count - self.farDead.count }

    /// The far tier's dead entries, not dropped yet (tests).
    package var farDeadEntries: Int { self.farDead.count }

    /// ``TimerNode/heapIndex`` of a far entry at `index` (and back: the map is its own inverse).
    @inline(__always)
    static func farIndex(_ index: Int) -> Int { -2 - index }

    /// The live entries of the due run (tests: whether a storm is served from one).
    package var dueRunCount: Int { self.runCount }

    /// The earliest entry, in the heap or at the front of the run.
    package var min: Entry? {
        guard self.runStart < self.run.count else { return self.entries.first }
        let front = self.run[self.runStart].entry
        guard let top = self.entries.first, top < front else { return front }
        return top
    }

    /// The node `ahead` places after the front of the due run (live or not; `nil` past its end),
    /// for prefetching: the loop reads it soon. Unretained; valid only under the shard's lock.
    package func runNode(ahead: Int) -> Unmanaged<TimerNode>? {
        let index = self.runStart + ahead
        return index < self.run.count ? self.run[index].entry.node : nil
    }

    /// The address of the run's entry `ahead` places after its front (0 past its end), for
    /// prefetching only: the loop serves many shards' runs in turn, too many streams for the
    /// CPU's own prefetcher to follow.
    package func runEntryAddress(ahead: Int) -> UInt {
        let index = self.runStart + ahead
        guard index < self.run.count else { return 0 }
        return self.run.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress! + index) }
    }

    /// Calls `body` with every entry's sequence and node (unretained: the table owns it),
    /// touching no node: the due run's first (in firing order), then the heap's in heap order
    /// (close to deadline order, which for timers of one delay is the order they were scheduled
    /// and allocated in), then the far tier's in the order they were filed there.
    package func forEachEntry(_ body: (_ sequence: UInt64, _ node: Unmanaged<TimerNode>) -> Void) {
        for runEntry in self.run[self.runStart...] where runEntry.isLive {
            body(runEntry.entry.sequence, runEntry.entry.node)
        }
        for entry in self.entries {
            body(entry.sequence, entry.node)
        }
        let dead = self.farDead
        for (index, entry) in self.far.enumerated() where !dead.contains(index) {
            body(entry.sequence, entry.node)
        }
    }

    /// Adds `node` at its current deadline and sequence: to the far tier if its deadline is at or
    /// after ``farBound`` (an append), else to the heap.
    @inline(__always)
    package mutating func insert(_ node: TimerNode) {
        let entry = Entry(deadline: node.fireAt, sequence: node.sequence, node: .passUnretained(node))
        if entry.deadline >= self.farBound, self.farBound != .max {
            // Full, an eighth of it dead: those are dropped rather than the storage grown (a copy
            // of it), so a tier whose timers come and go at a steady count keeps its storage.
            if self.far.count == self.far.capacity, self.farDead.count >= self.far.count / 8 { self.compactFar() }
            node.heapIndex = Int32(truncatingIfNeeded: Self.farIndex(self.far.count))
            self.far.append(entry)
            return
        }
        self.entries.append(entry)
        self.siftUp(from: self.entries.count - 1)
        // Not while a due run is served: its entries must stay before the far tier's, and a
        // bound drawn from the heap alone could come before some of them.
        if self.entries.count >= self.splitAt, self.runStart >= self.run.count { self.split() }
    }

    /// Removes the earliest entry (in the heap or at the front of the run); returns its node
    /// (still owned by the table).
    @discardableResult
    package mutating func removeMin() -> TimerNode? {
        self.removeMinUnretained()?.takeUnretainedValue()
    }

    /// ``removeMin()``, the node unretained (the table still owns it): for a caller that takes
    /// the table's reference next, with no retain and release in between.
    @inline(__always)
    package mutating func removeMinUnretained() -> Unmanaged<TimerNode>? {
        defer { self.refillIfDrained() }
        if self.runStart < self.run.count, self.entries.isEmpty || !(self.entries[0] < self.run[self.runStart].entry) {
            return self.removeFromRun(at: self.runStart)
        }
        guard !self.entries.isEmpty else { return nil }
        if self.gatherCredit > 0 { self.gatherCredit -= 1 }
        return self.remove(at: 0)
    }

    /// The entries the heap's storage holds, far tier included (for tests: a drained heap gives
    /// its memory back).
    package var capacity: Int { self.entries.capacity + self.far.capacity }

    /// Removes `node`'s entry, wherever it is.
    ///
    /// An entry's key is its node's ``TimerNode/fireAt`` when it was filed; a lazy extension may
    /// have moved the node's deadline later since (never earlier), so a key is never after its
    /// node's deadline and the registry files an early entry again when it reaches the top.
    ///
    /// A node in the heap proper or the far tier is at its ``TimerNode/heapIndex`` (see
    /// ``farIndex(_:)``), taken out of the far tier by marking its entry dead. A node gathered into the run
    /// still holds the index it had in the heap (writing a new one into every gathered node is
    /// the very cache miss the run avoids), so an index that does not point back at the node
    /// means the run, where the node is found by its key in O(log n) (by a scan of the run when a
    /// lazy extension changed its key).
    @inline(__always)
    package mutating func remove(_ node: TimerNode) {
        let index = Int(node.heapIndex)
        let address = Unmanaged.passUnretained(node).toOpaque()
        if index >= 0 && index < self.entries.count && self.entries[index].node.toOpaque() == address {
            self.remove(at: index)
            self.refillIfDrained()
            return
        }
        if index <= -2 {
            // A far index is exact (every move in or out of the far tier writes it), so the
            // entry, a line seldom in cache, is not read to check it.
            let farIndex = Self.farIndex(index)
            assert(
                farIndex < self.far.count && self.far[farIndex].node.toOpaque() == address
                    && !self.farDead.contains(farIndex),
                "TimerHeap: a far index that does not point back at its node")
            node.heapIndex = -1
            self.removeFar(at: farIndex)
            return
        }
        let key = Entry(deadline: node.fireAt, sequence: node.sequence, node: .passUnretained(node))
        var low = self.runStart
        var high = self.run.count
        while low < high {
            let middle = (low + high) / 2
            if self.run[middle].entry < key { low = middle + 1 } else { high = middle }
        }
        // Keys are unique (a sequence is drawn once per timer); hand-made nodes sharing one are
        // told apart by address.
        while low < self.run.count, !(key < self.run[low].entry),
            !self.run[low].isLive || self.run[low].entry.node.toOpaque() != address
        {
            low += 1
        }
        if low >= self.run.count || !self.run[low].isLive || self.run[low].entry.node.toOpaque() != address {
            // Filed before a lazy extension moved its deadline (see ``ShardState/reschedule(_:hash:to:now:)``):
            // its key is not the node's now. A run holds at most ``maximumGather`` entries.
            low = self.runStart
            while low < self.run.count, !self.run[low].isLive || self.run[low].entry.node.toOpaque() != address {
                low += 1
            }
        }
        precondition(
            low < self.run.count && self.run[low].isLive && self.run[low].entry.node.toOpaque() == address,
            "TimerHeap: node neither at its index nor in the due run")
        self.removeFromRun(at: low)
        self.refillIfDrained()
    }

    // MARK: The far tier

    /// Takes the far entry at `index` out (its node's index already reset).
    ///
    /// Next to the previous removal (timers ending in the order they were filed: expiring
    /// sessions, FIFO cancels) the entry's line is in cache: the last live entry takes its place,
    /// its node (filed last) written. Elsewhere that line would be a miss: the entry is marked dead
    /// in ``farDead`` without being touched. The dead ones go once they are as many as the live
    /// ones (``compactFar()``): each compaction moves at most as many entries as removals marked,
    /// so a removal costs at most one index written later, in one pass, instead of a miss now.
    @inline(__always)
    private mutating func removeFar(at index: Int) {
        let nearPrevious = abs(index &- self.previousFarRemoval) <= Self.nearRemoval
        self.previousFarRemoval = index
        if index == self.far.count - 1 || nearPrevious {
            // The dead entries at the end first: then the last entry is live (or the victim).
            self.dropTrailingDead(downTo: index + 1)
            let last = self.far.removeLast()
            if index < self.far.count {
                self.far[index] = last
                last.node._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: Self.farIndex(index)) }
            } else {
                self.dropTrailingDead(downTo: 0)  // The victim was last: the dead before it go too.
            }
        } else {
            self.farDead.insert(index)
        }
        if !self.emptyFarIfAllDead(), self.farDead.count >= Self.minimumCompaction,
            2 * self.farDead.count >= self.far.count
        {
            self.compactFar()
        }
    }

    /// Empties the far tier when no live entry is left in it (the invariant of ``farDead``);
    /// returns whether it did.
    private mutating func emptyFarIfAllDead() -> Bool {
        guard self.far.count == self.farDead.count else { return false }
        self.far = []
        self.farDead.removeAll()
        self.farBound = .max
        return true
    }

    /// How near the previous far removal (in entries, three cache lines) a removal swaps rather
    /// than marks its entry dead.
    static let nearRemoval = 8

    /// Dead far entries below which the far tier is not compacted (one cache line of entries
    /// costs more to move than it holds).
    package static let minimumCompaction = 64

    /// Drops the dead entries at the far tier's end, keeping at least `floor` entries.
    private mutating func dropTrailingDead(downTo floor: Int) {
        var end = self.far.count
        while end > floor, self.farDead.contains(end - 1) { end -= 1 }
        guard end < self.far.count else { return }
        self.far.removeLast(self.far.count - end)
        self.farDead.removeAll(from: end)
    }

    /// Drops the dead far entries: each hole below the live count takes the last live entry above
    /// it, whose node gets its new index, so at most one entry moves per dead one, and those that
    /// move were filed last (their nodes most likely still in cache; timers cancelled in the
    /// order they were scheduled leave their holes at the front).
    private mutating func compactFar() {
        guard !self.farDead.isEmpty else { return }
        let dead = self.farDead
        let live = self.far.count - dead.count
        self.far.withUnsafeMutableBufferPointer { buffer in
            var source = buffer.count - 1
            dead.forEach(below: live) { hole in
                // As many live entries lie at or above `live` as holes below it: one is left.
                while dead.contains(source) { source -= 1 }
                buffer[hole] = buffer[source]
                buffer[hole].node._withUnsafeGuaranteedRef {
                    $0.heapIndex = Int32(truncatingIfNeeded: Self.farIndex(hole))
                }
                source -= 1
            }
        }
        self.far.removeLast(self.far.count - live)
        self.farDead.removeAll()
        Self.fitIfSparse(&self.far)
    }

    /// Sparse (less than an eighth of its storage, above ``shrinkThreshold``): shrunk to twice its
    /// count, so an array drained one timer at a time gives its peak memory back. Amortized O(1):
    /// as many removals came before.
    private static func fitIfSparse(_ array: inout TierArray) {
        guard array.capacity > Self.shrinkThreshold, array.count * 8 < array.capacity else { return }
        array.shrink(toCapacity: array.count * 2)
    }

    /// A deadline such that about `wanted` of `entries` come before it, from an even sample of
    /// at most 128 of them; always after the sample's earliest (so at least one entry, the
    /// earliest, comes before it). `.max` when that would overflow.
    private static func bound(
        placing wanted: Int, of entries: UnsafeBufferPointer<Entry>
    ) -> Int64 {
        let samples = Swift.min(entries.count, 128)
        return withUnsafeTemporaryAllocation(of: Int64.self, capacity: samples) { sample in
            let stride = entries.count / samples
            for index in 0..<samples { sample[index] = entries[index * stride].deadline }
            var sample = sample
            sample.sort()
            let rank = Swift.min(samples - 1, wanted * samples / entries.count)
            let pick = sample[rank]
            return pick == .max ? .max : pick + 1
        }
    }

    /// Keeps the heap small when most timers are far off: moves the entries at or after a new
    /// ``farBound`` (chosen to keep about an eighth of the heap, at least ``nearTarget``) into
    /// the far tier, where filing or removing one is an append or a bit set instead of a sift
    /// through the heap's levels. Called when the heap reaches ``splitAt``.
    private mutating func split() {
        let wanted = Swift.max(Self.nearTarget, self.entries.count / 8)
        let bound = self.entries.withUnsafeBufferPointer { Self.bound(placing: wanted, of: $0) }
        // Timers due within a millisecond of the earliest (a storm) stay in the heap, where they
        // are gathered into one due run: apart, they would come back a batch at a time. A bound
        // of `.max` (every sampled timer at the clock's end) moves nothing.
        guard bound != .max, bound >= saturatingAdd(self.entries[0].deadline, Self.minimumFarSpan) else {
            self.splitAt = 2 * self.entries.count
            return
        }
        // Every heap entry is before the current bound, so the new one is not after it; the
        // earliest entry stays (the bound is at least a millisecond after it).
        var kept = 0
        var far = self.far
        self.far = []
        self.entries.withUnsafeMutableBufferPointer { buffer in
            for index in 0..<buffer.count {
                let entry = buffer[index]
                if entry.deadline >= bound {
                    entry.node._withUnsafeGuaranteedRef {
                        $0.heapIndex = Int32(truncatingIfNeeded: Self.farIndex(far.count))
                    }
                    far.append(entry)
                } else {
                    buffer[kept] = entry
                    kept += 1
                }
            }
        }
        self.far = far
        if kept < self.entries.count {
            self.entries.removeLast(self.entries.count - kept)
            self.farBound = bound
            self.heapify()
        }
        self.splitAt = Swift.max(Self.minimumSplit, 2 * self.entries.count)
    }

    /// Once the heap and the run are both empty, moves the far tier's earliest entries (about
    /// an eighth, at least ``nearTarget``, at most ``maximumRefill``) into the heap, so the
    /// earliest entry is never in the far tier. One pass over the far tier: at a million timers
    /// (16 000 a shard) each entry is scanned about sixteen times in its life, a sequential
    /// read of 24 bytes; the nodes are touched only to write the indices of those that move.
    /// Dead entries (see ``farDead``) take part by their keys, their bits moving with them, and
    /// those that come near are dropped: a refill never moves the whole tier to close it up.
    private mutating func refillIfDrained() {
        // Every entry that came near may have been dead: then again, with the rest.
        while self.entries.isEmpty, self.runStart >= self.run.count, !self.far.isEmpty {
            self.refill()
        }
    }

    private mutating func refill() {
        // A small far tier comes back whole: one pass, and a storm among them is one due run. So
        // does one whose sampled timers all stand at the clock's end (a bound of `.max`).
        let bound =
            self.far.count - self.farDead.count <= Self.maximumRefill
            ? .max
            : self.far.withUnsafeBufferPointer {
                Self.bound(placing: Swift.min(Swift.max(Self.nearTarget, $0.count / 8), Self.maximumRefill), of: $0)
            }
        // Partition in place: what stays far to the front, what comes near from `low` on. Only a
        // live far entry that changes place gets its index written (about as many as come near).
        var low = 0
        if bound != .max {
            var high = self.far.count
            var dead = self.farDead
            self.farDead.removeAll()  // Unique: its marks are swapped in place.
            self.far.withUnsafeMutableBufferPointer { buffer in
                while true {
                    while low < high, buffer[low].deadline >= bound { low += 1 }
                    while low < high, buffer[high - 1].deadline < bound { high -= 1 }
                    guard low < high else { break }
                    buffer.swapAt(low, high - 1)
                    if !dead.isEmpty { dead.swapAt(low, high - 1) }
                    if !dead.contains(low) {
                        buffer[low].node._withUnsafeGuaranteedRef {
                            $0.heapIndex = Int32(truncatingIfNeeded: Self.farIndex(low))
                        }
                    }
                    low += 1
                    high -= 1
                }
            }
            self.farDead = dead
        }
        if self.farDead.isEmpty {
            self.entries.append(elementsOf: self.far, from: low)
        } else {
            for index in low..<self.far.count where !self.farDead.contains(index) {
                self.entries.append(self.far[index])
            }
            self.farDead.removeAll(from: low)
        }
        self.far.removeLast(self.far.count - low)
        if !self.emptyFarIfAllDead() {
            self.farBound = bound
        }
        self.heapify()
        self.splitAt = Swift.max(Self.minimumSplit, 2 * self.entries.count)
    }

    /// Takes the run's entry at `index` out (it is live); returns its node.
    @discardableResult
    private mutating func removeFromRun(at index: Int) -> Unmanaged<TimerNode> {
        let node = self.run[index].entry.node
        node._withUnsafeGuaranteedRef { $0.heapIndex = -1 }
        self.run[index].isLive = false
        self.runCount -= 1
        while self.runStart < self.run.count, !self.run[self.runStart].isLive {
            self.runStart += 1
        }
        if self.runStart == self.run.count {
            self.run = []
            self.runStart = 0
        }
        return node
    }

    /// If at least half of the heap's entries are due at `bound` (their deadline is not after
    /// it), moves every due entry into the due run in one pass, sorted in firing order, and
    /// rebuilds the heap from the rest; otherwise changes nothing. Call it before popping due
    /// timers: it only pays when many are due (a storm), and costs a bounded count otherwise.
    ///
    /// Only the entries that stay in the heap get a new index written into their node (at most
    /// as many as were gathered); the gathered nodes are not touched. A heap of more than
    /// ``maximumGather`` entries is popped one by one as before: the gather runs under the
    /// shard's lock, and its time grows with the heap.
    package mutating func gatherDue(notAfter bound: Int64) {
        guard self.runStart >= self.run.count, self.gatherCredit == 0, self.entries.count >= Self.minimumRun,
            self.entries.count <= Self.maximumGather, self.entries[0].deadline <= bound
        else { return }
        let needed = (self.entries.count + 1) / 2
        let due = self.countDue(notAfter: bound, upTo: needed)
        guard due >= needed else {
            // The due entries counted are popped before the next count (at least a few, so a heap
            // with one timer due at a time is not counted at every pop).
            self.gatherCredit = Swift.max(due, 16)
            return
        }
        var gathered = ContiguousArray<Entry>()
        var kept = 0
        self.entries.withUnsafeMutableBufferPointer { buffer in
            gathered.reserveCapacity(buffer.count)
            for index in 0..<buffer.count {
                let entry = buffer[index]
                if entry.deadline <= bound {
                    gathered.append(entry)
                } else {
                    buffer[kept] = entry
                    kept += 1
                }
            }
        }
        self.entries.removeLast(self.entries.count - kept)
        self.run = Self.inFiringOrder(gathered)
        self.runStart = 0
        self.runCount = self.run.count
        self.heapify()
    }

    /// The most entries a heap may hold for ``gatherDue(notAfter:)`` to gather its due ones, so
    /// that a gather holds the shard's lock a bounded time (a storm of 100 000 puts about 1 600
    /// in each shard).
    package static let maximumGather = 2048

    /// A gathered run in firing order: by deadline, then sequence. Both usually span few bits (a
    /// storm's deadlines lie within microseconds, its sequences within the timers scheduled
    /// since), so they are packed into one 64-bit key and sorted by radix, 8 bits a pass, in O(n)
    /// per pass, where a comparison sort costs O(n log n) comparisons under the lock. Keys that do not fit in 64 bits fall back to a comparison sort.
    private static func inFiringOrder(_ gathered: ContiguousArray<Entry>) -> ContiguousArray<RunEntry> {
        let count = gathered.count
        var lowDeadline = Int64.max
        var highDeadline = Int64.min
        var lowSequence = UInt64.max
        var highSequence = UInt64.min
        for entry in gathered {
            lowDeadline = Swift.min(lowDeadline, entry.deadline)
            highDeadline = Swift.max(highDeadline, entry.deadline)
            lowSequence = Swift.min(lowSequence, entry.sequence)
            highSequence = Swift.max(highSequence, entry.sequence)
        }
        // Two's complement: the wrapped difference is the true span, which fits in 64 bits unsigned.
        let deadlineBits = UInt64.bitWidth - UInt64(bitPattern: highDeadline &- lowDeadline).leadingZeroBitCount
        let sequenceBits = UInt64.bitWidth - (highSequence &- lowSequence).leadingZeroBitCount
        guard count > 1, deadlineBits + sequenceBits <= UInt64.bitWidth, count <= Int(UInt32.max) else {
            return ContiguousArray(gathered.sorted { $0 < $1 }.lazy.map { RunEntry(entry: $0) })
        }
        typealias Keyed = (key: UInt64, index: UInt32)
        // `<<` by 64 (no sequence bits left) is 0, as wanted.
        var keyed = ContiguousArray<Keyed>(unsafeUninitializedCapacity: count) { buffer, initialized in
            for index in 0..<count {
                let entry = gathered[index]
                let key =
                    UInt64(bitPattern: entry.deadline &- lowDeadline) << UInt64(sequenceBits)
                    | (entry.sequence &- lowSequence)
                buffer[index] = (key, UInt32(truncatingIfNeeded: index))
            }
            initialized = count
        }
        var spare = ContiguousArray<Keyed>(unsafeUninitializedCapacity: count) { buffer, initialized in
            for index in 0..<count { buffer[index] = (0, 0) }
            initialized = count
        }
        // Every digit's counts in one read of the keys (8 digits at most, 256 counts each); a
        // digit whose values all fall in one bucket (the high bits of a storm's deadlines) moves
        // nothing and is skipped.
        let digits = (deadlineBits + sequenceBits + 7) / 8
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 8 * 256) { counts in
            counts.initialize(repeating: 0)
            keyed.withUnsafeBufferPointer { source in
                for item in source {
                    var key = item.key
                    for digit in 0..<digits {
                        counts[digit &* 256 &+ Int(truncatingIfNeeded: key & 0xFF)] &+= 1
                        key &>>= 8
                    }
                }
            }
            for digit in 0..<digits {
                let base = digit &* 256
                let shift = UInt64(digit &* 8)
                var start = 0
                var moves = false
                for bucket in base..<base &+ 256 {
                    let inBucket = counts[bucket]
                    if inBucket != 0, inBucket != count { moves = true }
                    counts[bucket] = start
                    start &+= inBucket
                }
                guard moves else { continue }
                keyed.withUnsafeBufferPointer { source in
                    spare.withUnsafeMutableBufferPointer { target in
                        for item in source {
                            let bucket = base &+ Int(truncatingIfNeeded: (item.key &>> shift) & 0xFF)
                            target[counts[bucket]] = item
                            counts[bucket] &+= 1
                        }
                    }
                }
                swap(&keyed, &spare)
            }
        }
        return ContiguousArray<RunEntry>(unsafeUninitializedCapacity: count) { buffer, initialized in
            for index in 0..<count {
                buffer[index] = RunEntry(entry: gathered[Int(keyed[index].index)])
            }
            initialized = count
        }
    }

    /// How many entries are due at `bound`, counting no further than `limit`: a walk down from
    /// the root that enters only due entries (they form a subtree at the root, since a parent is
    /// never after its children), so it reads about four entries per due one. Depth first, its
    /// stack holds at most three siblings a level: 49 places cover any heap an `Int32` indexes
    /// (16 levels), so 128 leave room.
    private func countDue(notAfter bound: Int64, upTo limit: Int) -> Int {
        self.entries.withUnsafeBufferPointer { buffer in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: 128) { stack in
                var count = 0
                var depth = 1
                stack[0] = 0
                while depth > 0 {
                    depth -= 1
                    let index = stack[depth]
                    guard buffer[index].deadline <= bound else { continue }
                    count += 1
                    if count >= limit { return count }
                    let first = 4 * index + 1
                    guard first < buffer.count else { continue }
                    for child in first..<Swift.min(first + 4, buffer.count) {
                        stack[depth] = child
                        depth += 1
                    }
                }
                return count
            }
        }
    }

    /// Restores the heap order over the whole array (Floyd's bottom-up build), then writes every
    /// entry's index into its node.
    private mutating func heapify() {
        let count = self.entries.count
        guard count > 1 else {
            if count == 1 { self.entries[0].node._withUnsafeGuaranteedRef { $0.heapIndex = 0 } }
            return
        }
        for start in stride(from: (count - 2) / 4, through: 0, by: -1) {
            self.siftDown(from: start, writingIndices: false)
        }
        self.entries.withUnsafeBufferPointer { buffer in
            for index in 0..<count {
                buffer[index].node._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: index) }
            }
        }
    }

    /// Removes the entry at `index`: the last entry takes its place and sifts to where it belongs.
    @discardableResult
    private mutating func remove(at index: Int) -> Unmanaged<TimerNode> {
        let removedEntry = self.entries[index]
        let removed = removedEntry.node
        removed._withUnsafeGuaranteedRef { $0.heapIndex = -1 }
        let last = self.entries.removeLast()
        Self.fitIfSparse(&self.entries)
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

    private mutating func siftDown(from start: Int, writingIndices: Bool = true) {
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
                if writingIndices {
                    base[hole].node._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: hole) }
                }
                hole = child
            }
            base[hole] = moving
            if writingIndices {
                moving.node._withUnsafeGuaranteedRef { $0.heapIndex = Int32(truncatingIfNeeded: hole) }
            }
        }
    }

    // MARK: Invariants (tests)

    /// Calls `body` with every entry's key and node: the due run's live entries, the heap's, then
    /// the far tier's (tests).
    package func forEachKeyedEntry(_ body: (_ entry: Entry) -> Void) {
        for runEntry in self.run[self.runStart...] where runEntry.isLive { body(runEntry.entry) }
        for entry in self.entries { body(entry) }
        let dead = self.farDead
        for (index, entry) in self.far.enumerated() where !dead.contains(index) { body(entry) }
    }

    /// What is wrong with the heap's own structure (empty when nothing): the heap order, each
    /// entry's index in its node, and the due run's order, front and count.
    package func structureViolations() -> [String] {
        var violations: [String] = []
        for (index, entry) in self.entries.enumerated() {
            if index > 0, entry < self.entries[(index - 1) / 4] {
                violations.append("heap entry \(index) comes before its parent")
            }
            if entry.node._withUnsafeGuaranteedRef({ Int($0.heapIndex) }) != index {
                violations.append("heap entry \(index): its node says it is at another index")
            }
        }
        var dead = 0
        for (index, entry) in self.far.enumerated() {
            if self.farDead.contains(index) {
                dead += 1
                continue
            }
            if entry.deadline < self.farBound { violations.append("far entry \(index) is before the far bound") }
            if entry.node._withUnsafeGuaranteedRef({ Int($0.heapIndex) }) != Self.farIndex(index) {
                violations.append("far entry \(index): its node says it is elsewhere")
            }
        }
        // `.max`: no far tier, so nothing to be before.
        if self.farBound != .max, let late = self.entries.first(where: { $0.deadline >= self.farBound }) {
            violations.append("heap entry at \(late.deadline) is not before the far bound \(self.farBound)")
        }
        if self.farBound != .max,
            self.run[self.runStart...].contains(where: { $0.isLive && $0.entry.deadline >= self.farBound })
        {
            violations.append("a due run entry is not before the far bound")
        }
        if dead != self.farDead.count {
            violations.append("far tier: \(dead) dead entries, counted \(self.farDead.count)")
        }
        if self.farDead.wordCount > (self.far.count + 63) / 64 {
            violations.append("far tier: dead bits past its end")
        }
        if !self.far.isEmpty, dead == self.far.count { violations.append("far tier: every entry is dead") }
        if self.far.isEmpty != (self.farBound == .max) {
            violations.append("far tier: \(self.far.count) entries, bound \(self.farBound)")
        }
        if !self.far.isEmpty, self.entries.isEmpty, self.runCount == 0 {
            violations.append("far tier holds entries while the heap and the run are empty")
        }
        let live = self.run[self.runStart...].filter(\.isLive)
        if live.count != self.runCount { violations.append("due run: \(live.count) live, counted \(self.runCount)") }
        if self.runStart < self.run.count, !self.run[self.runStart].isLive {
            violations.append("due run: its front is not live")
        }
        for index in self.run.indices.dropFirst() where self.run[index].entry < self.run[index - 1].entry {
            violations.append("due run: entry \(index) out of firing order")
        }
        return violations
    }
}
