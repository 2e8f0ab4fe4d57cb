/// The loop's view of each shard's head: what it saw there last, which is exactly what that
/// shard's registry holds as `loopLooksAt` until a push comes before it (that push marks the
/// shard dirty and rings the doorbell if needed).
///
/// A tournament tree over the shards: every inner node holds the shard with the earliest head
/// below it, so the earliest shard is read in O(1) and a changed head costs log2(shards)
/// comparisons, instead of a scan of every shard per fire (a storm of 100 000 due timers
/// changes a head 100 000 times).
///
/// Each node keeps its winner's place in firing order as one 128-bit key (the deadline, its
/// sign bit flipped, above the sequence), so a level of an update is one load of the sibling,
/// one comparison and two conditional moves: in a storm which shard wins is a coin toss, and a
/// branch per level would be mispredicted half the time.
package final class LoopHeads: @unchecked Sendable {
    // Invariant: touched only by whatever drives the core, one call of `runDue` (or one handler
    // it calls) at a time: the loop thread, the alarm's serial queue, or a virtual `advance`.
    private let heads: UnsafeMutablePointer<ShardState.Head>
    /// Tree positions 1..<2·count: inner nodes below `count` (children 2i and 2i+1), the leaf
    /// of shard k at `count + k`. `keys[i]` is the key of the earliest head under position i,
    /// `winners[i]` its shard.
    private let keys: UnsafeMutablePointer<UInt128>
    private let winners: UnsafeMutablePointer<Int>
    private let count: Int
    /// Shards whose ID table the loop left sparse as it ended one-shots (bit `k` for shard `k`),
    /// shrunk once nothing is due (``TimerCore/shrinkSparseTables()``).
    var sparseTables: UInt64 = 0

    /// - Parameter count: The number of shards, a power of two, at least 2.
    package init(count: Int) {
        precondition(count >= 2 && count & (count - 1) == 0, "LoopHeads: a power of two, at least 2")
        self.count = count
        self.heads = .allocate(capacity: count)
        self.heads.initialize(repeating: .none, count: count)
        self.keys = .allocate(capacity: 2 * count)
        self.keys.initialize(repeating: Self.key(of: .none), count: 2 * count)
        self.winners = .allocate(capacity: 2 * count)
        self.winners.initialize(repeating: 0, count: 2 * count)
        for shard in 0..<count {
            self.winners[count + shard] = shard
        }
        for node in stride(from: count - 1, through: 1, by: -1) {
            self.winners[node] = self.winners[2 * node]  // All heads are `.none`: any one wins.
        }
    }

    deinit {
        self.heads.deallocate()
        self.keys.deallocate()
        self.winners.deallocate()
    }

    /// `head`'s place in firing order as one unsigned number: (deadline, sequence) compared as
    /// a pair is this key compared as a whole.
    @inline(__always)
    static func key(of head: ShardState.Head) -> UInt128 {
        let deadline = UInt64(bitPattern: head.deadline) ^ (1 << 63)
        return UInt128(deadline) << 64 | UInt128(head.sequence)
    }

    package subscript(index: Int) -> ShardState.Head {
        get { self.heads[index] }
        set {
            self.heads[index] = newValue
            var position = self.count + index
            var key = Self.key(of: newValue)
            self.keys[position] = key
            while position > 1 {
                let sibling = position ^ 1
                let siblingKey = self.keys[sibling]
                // Equal keys are equal heads (no two timers share a sequence): only shards without
                // timers tie, and which of them wins does not matter.
                let siblingWins = siblingKey < key
                // The winning child is picked by a conditional move and read by its position, not
                // by branch (see the type's comment).
                let chosen = siblingWins ? sibling : position
                key = siblingWins ? siblingKey : key
                position >>= 1
                self.keys[position] = key
                self.winners[position] = self.winners[chosen]
            }
        }
    }

    /// The shard whose head comes first, and that head.
    @inline(__always)
    package func earliest() -> (index: Int, head: ShardState.Head) {
        let best = self.winners[1]
        return (best, self.heads[best])
    }
}
