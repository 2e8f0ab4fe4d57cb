/// The loop's view of each shard's head: what it saw there last, which is exactly what that
/// shard's registry holds as `loopLooksAt` until a push comes before it (that push marks the
/// shard dirty and rings the doorbell if needed).
///
/// A tournament tree over the shards: every inner node holds the shard with the earliest head
/// below it, so the earliest shard is read in O(1) and a changed head costs log2(shards)
/// comparisons, instead of a scan of every shard per fire (a storm of 100 000 due timers
/// changes a head 100 000 times).
final class LoopHeads: @unchecked Sendable {
    // Invariant: touched only by whatever drives the core, one call of `runDue` (or one handler
    // it calls) at a time: the loop thread, the alarm's serial queue, or a virtual `advance`.
    private let heads: UnsafeMutablePointer<ShardState.Head>
    /// `winners[i]` for i in 1..<count: the shard with the earliest head under inner node i
    /// (children 2i and 2i+1; a child at or past `count` is the leaf for shard child − count).
    private let winners: UnsafeMutablePointer<Int>
    private let count: Int
    /// Shards whose ID table the loop left sparse as it ended one-shots (bit `k` for shard `k`),
    /// shrunk once nothing is due (``TimerCore/shrinkSparseTables()``).
    var sparseTables: UInt64 = 0

    /// - Parameter count: The number of shards, a power of two, at least 2.
    init(count: Int) {
        precondition(count >= 2 && count & (count - 1) == 0, "LoopHeads: a power of two, at least 2")
        self.count = count
        self.heads = .allocate(capacity: count)
        self.heads.initialize(repeating: .none, count: count)
        self.winners = .allocate(capacity: count)
        self.winners.initialize(repeating: 0, count: count)
        for node in stride(from: count - 1, through: 1, by: -1) {
            self.winners[node] = self.winner(of: node)
        }
    }

    deinit {
        self.heads.deallocate()
        self.winners.deallocate()
    }

    @inline(__always)
    private func winner(of node: Int) -> Int {
        let left = 2 * node
        let right = left + 1
        let a = left >= self.count ? left - self.count : self.winners[left]
        let b = right >= self.count ? right - self.count : self.winners[right]
        return self.heads[b] < self.heads[a] ? b : a
    }

    subscript(index: Int) -> ShardState.Head {
        get { self.heads[index] }
        set {
            self.heads[index] = newValue
            var node = (index + self.count) / 2
            while node >= 1 {
                self.winners[node] = self.winner(of: node)
                node /= 2
            }
        }
    }

    /// The shard whose head comes first, and that head.
    @inline(__always)
    func earliest() -> (index: Int, head: ShardState.Head) {
        let best = self.winners[1]
        return (best, self.heads[best])
    }
}
