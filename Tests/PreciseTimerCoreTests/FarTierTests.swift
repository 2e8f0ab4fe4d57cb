import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// The far tier's removals mark their entry dead instead of moving the last entry into its
/// place; the dead entries go once they are as many as the live ones, or as a refill brings
/// them near.
@Suite("Far tier removals")
struct FarTierTests {
    private static func node(_ number: Int, deadline: Int64) -> TimerNode {
        let node = TimerNode.make(id: TimerID("far-\(number)"), deadline: deadline, interval: 0, options: .init()) {
            _ in
        }
        node.sequence = UInt64(number)
        return node
    }

    /// Random far victims are taken out while their nodes are freed at once (the heap does not
    /// retain them, and nothing else does here): every later pass (counts, the invariants, the
    /// entries' walk, compaction, the refills that drain the heap) must skip their entries without
    /// reading through them, which the address sanitizer checks. What is left pops in order.
    @Test("removed far entries are never read, dropped by compaction, and the rest pops in order")
    func deadEntriesAreSkippedAndDropped() {
        var random = SplitMix(seed: 0xFA2)
        var heap = TimerHeap()
        var live: [Int: TimerNode] = [:]
        for number in 1...8_000 {
            let node = Self.node(number, deadline: Int64.random(in: 0..<10_000_000_000, using: &random))
            live[number] = node
            heap.insert(node)
        }
        let farAtStart = heap.farCount
        #expect(farAtStart > 6_000)
        var mostDead = 0
        var compactions = 0
        var removed = 0
        var pool = Array(live.keys).sorted()
        while removed < 6_000 {
            // Random victims: most are far (seven in eight), the rest in the heap.
            let number = pool.remove(at: Int.random(in: 0..<pool.count, using: &random))
            let victim = live[number]!
            let deadBefore = heap.farDeadEntries
            heap.remove(victim)
            #expect(victim.heapIndex == -1)
            live[number] = nil  // The node is freed here.
            removed += 1
            if heap.farDeadEntries < deadBefore { compactions += 1 }
            mostDead = max(mostDead, heap.farDeadEntries)
            #expect(heap.count == live.count)
            // Never more dead than live, beyond the first few.
            #expect(heap.farDeadEntries <= max(TimerHeap.minimumCompaction, heap.farCount))
            if removed % 97 == 0 {
                let violations = heap.structureViolations()
                #expect(violations.isEmpty, "\(violations.prefix(3))")
                var walked = 0
                heap.forEachEntry { _, _ in walked += 1 }
                #expect(walked == live.count)
            }
        }
        #expect(mostDead >= TimerHeap.minimumCompaction)
        #expect(compactions > 0)
        #expect(heap.structureViolations().isEmpty)
        // Drain in order: refills drop the dead entries they bring near, and each popped node is
        // the earliest left.
        let order = live.values.sorted { ($0.fireAt, $0.sequence) < ($1.fireAt, $1.sequence) }
        for expected in order {
            #expect(heap.removeMin() === expected)
        }
        #expect(heap.count == 0 && heap.farCount == 0 && heap.farDeadEntries == 0)
        #expect(heap.structureViolations().isEmpty)
    }

    /// The earliest far timers are cancelled, fewer than half the tier (so no compaction), and
    /// then everything pops: the first refills bring back only dead entries, which they drop,
    /// refilling again until a live one comes near.
    @Test("a refill drops the dead entries it brings near, and refills again when all were dead")
    func refillDropsDeadEntries() {
        var heap = TimerHeap()
        var live: [Int: TimerNode] = [:]
        for number in 1...6_000 {
            // Spread over six seconds, scheduled out of order.
            let node = Self.node(number, deadline: Int64((number * 7_919) % 6_000 + 1) * 1_000_000)
            live[number] = node
            heap.insert(node)
        }
        let far = live.filter { $0.value.heapIndex <= -2 }.sorted { $0.value.fireAt < $1.value.fireAt }
        #expect(far.count > 5_000 && far.count > 2 * 1_500)
        for (number, node) in far.prefix(1_500) {
            heap.remove(node)
            live[number] = nil
        }
        // Most are far from the removal before them (a few neighbours swap instead).
        #expect(heap.farDeadEntries > 1_300)
        #expect(heap.count == live.count && heap.structureViolations().isEmpty)
        var popped = 0
        var last: (Int64, UInt64) = (.min, 0)
        while let node = heap.removeMin() {
            #expect(live.removeValue(forKey: Int(node.sequence)) === node)
            #expect(last < (node.fireAt, node.sequence))
            last = (node.fireAt, node.sequence)
            popped += 1
            if popped % 200 == 0 {
                let violations = heap.structureViolations()
                #expect(violations.isEmpty, "\(violations.prefix(3))")
            }
        }
        #expect(live.isEmpty && popped == 4_500)
        #expect(heap.count == 0 && heap.farDeadEntries == 0)
    }

    /// Timers ending in the order they were filed (FIFO cancels, sessions expiring in turn)
    /// find each entry next to the previous one, in cache: swapped out at once, none left dead.
    @Test("removals in filing order swap their entries out instead of leaving them dead")
    func removalsInOrderLeaveNoDeadEntries() {
        var heap = TimerHeap()
        var nodes: [TimerNode] = []
        for number in 1...4_000 {
            let deadline: Int64 = number <= 200 ? Int64(number) : Int64((number * 7_919) % 4_000 + 1) * 1_000_000_000
            nodes.append(Self.node(number, deadline: deadline))
            heap.insert(nodes[number - 1])
        }
        let farNodes = nodes.filter { $0.heapIndex <= -2 }.sorted { $0.heapIndex > $1.heapIndex }
        #expect(farNodes.count > 3_000)
        for (removed, node) in farNodes.prefix(2_000).enumerated() {
            heap.remove(node)
            // The first is far from any earlier removal; each next one is not.
            #expect(heap.farDeadEntries <= 1, "removal \(removed)")
        }
        #expect(heap.farCount == farNodes.count - 2_000)
        #expect(heap.structureViolations().isEmpty)
        withExtendedLifetime(nodes) {}
    }

    @Test("taking out the far tier's last entry drops it and the dead entries before it")
    func lastEntryDropsTrailingDead() {
        var heap = TimerHeap()
        var nodes: [TimerNode] = []
        // A near cluster keeps the earliest in the heap; the rest go far.
        for number in 1...2_000 {
            let deadline: Int64 = number <= 200 ? Int64(number) : 1_000_000_000 + Int64(number) * 1_000_000
            nodes.append(Self.node(number, deadline: deadline))
            heap.insert(nodes[number - 1])
        }
        let farNodes = nodes.filter { $0.heapIndex <= -2 }.sorted { $0.heapIndex > $1.heapIndex }  // In far order.
        #expect(farNodes.count > 100)
        let count = heap.count
        // Two before the last, each far from the removal before it (marked dead, with one at
        // the front in between), then the last: the three leave, the one at the front stays dead.
        let tail = Array(farNodes.suffix(3))
        heap.remove(tail[0])
        heap.remove(farNodes[0])
        heap.remove(tail[1])
        #expect(heap.farDeadEntries == 3)
        heap.remove(tail[2])
        #expect(heap.farDeadEntries == 1)
        #expect(heap.count == count - 4 && heap.farCount == farNodes.count - 4)
        #expect(heap.structureViolations().isEmpty)
        // A node filed afterwards takes the next far index and is found there.
        let late = Self.node(5_000, deadline: 9_000_000_000)
        heap.insert(late)
        #expect(late.heapIndex == Int32(-2 - (farNodes.count - 3)))
        heap.remove(late)
        #expect(heap.structureViolations().isEmpty)
        withExtendedLifetime(nodes) {}
    }
}
