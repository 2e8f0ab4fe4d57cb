import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// The loop's tournament over the shards' heads agrees with a scan of every head.
@Suite struct LoopHeadsTests {
    /// The shard a scan picks: one whose head is the earliest in firing order.
    private static func scan(_ heads: [ShardState.Head]) -> Int {
        var best = 0
        for index in heads.indices.dropFirst() where heads[index] < heads[best] { best = index }
        return best
    }

    /// Random changes to 64 shards' heads, drawn so that deadlines often tie (then the sequence
    /// decides), heads are often equal (`.none`, `.running`, and a few sequences shared on
    /// purpose), at both ends of the deadline range (the key flips the sign bit).
    @Test(arguments: [2, 4, 64])
    func agreesWithAScan(shards: Int) {
        var random = SplitMix(seed: 0x10AD_4EAD + UInt64(shards))
        let tree = LoopHeads(count: shards)
        var heads = [ShardState.Head](repeating: .none, count: shards)
        #expect(tree.earliest().index == 0)
        let deadlines: [Int64] = [.min, -1, 0, 1, 7, 1_000_000_000, .max - 1, .max]
        for _ in 0..<20_000 {
            let shard = Int(random.next() % UInt64(shards))
            let head: ShardState.Head
            switch random.next() % 8 {
            case 0: head = .none
            case 1: head = .running
            default:
                head = ShardState.Head(
                    deadline: deadlines[Int(random.next() % UInt64(deadlines.count))], sequence: random.next() % 4,
                    address: UInt(shard))
            }
            tree[shard] = head
            heads[shard] = head
            let (index, earliest) = tree.earliest()
            let expected = Self.scan(heads)
            // Among equal heads (shards without timers, or sentinels) any one may win, but the
            // winner's head is the earliest, and it is that shard's.
            #expect(earliest == heads[expected])
            #expect(earliest == heads[index] && earliest.address == heads[index].address)
            #expect(tree[shard] == head)
            if earliest != heads[expected] { return }
        }
    }
}
