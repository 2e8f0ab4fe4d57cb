import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// ``TimerTable`` (8-byte slots: a node's address with 20 bits of its hash) behaves as a
/// dictionary from ID to node, through growth, shrinking and backward-shift removals, with its
/// slots' homes taken from the packed bits or, past its limit, from the nodes' own hashes.
@Suite struct TimerTableTests {
    /// Random inserts, duplicate inserts, look-ups, removals by ID (in the two steps a cancel takes) and by node, each checked
    /// against a `Dictionary`. Chosen and generated IDs mix; among 6 000 chosen IDs some pairs
    /// share their 20 low hash bits, so a look-up must tell them apart by their nodes.
    ///
    /// - Parameter homeFromBitsLimit: 2²⁰ (the default: homes from the packed bits) or 32 (past
    ///   32 slots, homes from each node's hash).
    @Test(arguments: [TimerTable.packedHashLimit, 32])
    func agreesWithADictionary(homeFromBitsLimit: Int) throws {
        var random = SplitMix(seed: 0x7AB1E)
        let table = TimerTable(homeFromBitsLimit: homeFromBitsLimit)
        var model: [TimerID: TimerNode] = [:]
        var peak = 0
        func newID() -> TimerID {
            Bool.random(using: &random)
                ? TimerID("chosen-\(UInt64.random(in: 0..<6_000, using: &random))")
                : TimerID(generatedNumber: UInt64.random(in: 1..<6_000, using: &random))
        }
        for step in 0..<40_000 {
            // Mostly inserts in the first half, mostly removals in the second: the table grows
            // past 4 096 slots, then drains and shrinks.
            let inserting = Int.random(in: 0..<10, using: &random) < (step < 20_000 ? 7 : 3)
            let id = newID()
            let hash = id.tableHash
            if inserting {
                let node = TimerNode.make(id: id, deadline: 0, interval: 0, options: .init()) { _ in }
                let existing = table.insert(node, hash: hash)
                #expect(existing === model[id], "\(id)")
                if existing == nil { model[id] = node }
            } else if Bool.random(using: &random), let node = model[id] {
                // By identity: a twin under the same ID removes nothing, the node itself does.
                let twin = TimerNode.make(id: id, deadline: 0, interval: 0, options: .init()) { _ in }
                #expect(table.slot(ofNodeAt: Self.address(of: twin), hash: hash) == nil)
                #expect(table.slot(ofNodeAt: Self.address(of: node), hash: hash)?.node.takeUnretainedValue() === node)
                #expect(table.remove(twin, hash: hash) == nil)
                #expect(table.remove(node, hash: hash) === node)
                model[id] = nil
            } else if let (slot, node) = table.slot(of: id, hash: hash) {
                // By ID, in two steps, as a cancel ends its timer in between.
                #expect(node.takeUnretainedValue() === model[id], "\(id)")
                #expect(table.remove(atSlot: slot) === model[id], "\(id)")
                model[id] = nil
            } else {
                #expect(model[id] == nil, "\(id)")
            }
            #expect(table.count == model.count)
            if step % 97 == 0 {
                let displaced = table.displacedCounts
                #expect(displaced.kept == displaced.counted, "step \(step)")
            }
            peak = max(peak, table.capacity)
        }
        #expect(table.displacedCounts.kept == table.displacedCounts.counted)
        #expect(peak >= 4_096)
        for number: UInt64 in 1..<6_000 {
            for id in [TimerID("chosen-\(number)"), TimerID(generatedNumber: number)] {
                #expect(table.find(id, hash: id.tableHash) === model[id], "\(id)")
            }
        }
        var seen: [ObjectIdentifier: Int] = [:]
        table.forEachNode { seen[ObjectIdentifier($0), default: 0] += 1 }
        #expect(seen.count == model.count && seen.values.allSatisfy { $0 == 1 })
        for (id, node) in model {
            #expect(table.remove(id, hash: id.tableHash) === node)
        }
        #expect(table.count == 0 && table.capacity == 16)
    }

    /// Generated IDs whose live numbers are a window that moves (the oldest removed as the next
    /// is added, as expiring sessions and FIFO cancels do): each is in its home slot, so a
    /// removal shifts nothing back. Chosen IDs in the same table are displaced and counted.
    /// Numbers are one shard's, every ``TimerCore/shardCount``-th, as a shard's table holds them.
    @Test func generatedWindowStaysInItsHomes() throws {
        let table = TimerTable()
        let window: UInt64 = 3_000
        var nodes: [UInt64: TimerNode] = [:]
        func add(_ number: UInt64) {
            let id = TimerID(generatedNumber: number * UInt64(TimerCore.shardCount))
            let node = TimerNode.make(id: id, deadline: 0, interval: 0, options: .init()) { _ in }
            #expect(table.insert(node, hash: id.tableHash) == nil)
            nodes[number] = node
        }
        for number in 1...window { add(number) }
        for number in (window + 1)...(window * 10) {
            let oldest = number - window
            let id = TimerID(generatedNumber: oldest * UInt64(TimerCore.shardCount))
            #expect(table.remove(nodes.removeValue(forKey: oldest)!, hash: id.tableHash) != nil)
            add(number)
            if number % 1_000 == 0 {
                let displaced = table.displacedCounts
                #expect(displaced.kept == 0 && displaced.counted == 0, "at \(number)")
            }
        }
        // Chosen IDs probe past each other's homes: counted while there, and gone when removed.
        let chosen = (0..<2_000).map { TimerID("session-\($0)") }
        var chosenNodes: [TimerNode] = []
        for id in chosen {
            let node = TimerNode.make(id: id, deadline: 0, interval: 0, options: .init()) { _ in }
            #expect(table.insert(node, hash: id.tableHash) == nil)
            chosenNodes.append(node)
        }
        let mixed = table.displacedCounts
        #expect(mixed.kept == mixed.counted && mixed.kept > 0)
        for (id, node) in zip(chosen, chosenNodes) { #expect(table.remove(node, hash: id.tableHash) === node) }
        let after = table.displacedCounts
        #expect(after.kept == after.counted)
        for (number, node) in nodes {
            let id = TimerID(generatedNumber: number * UInt64(TimerCore.shardCount))
            #expect(table.find(id, hash: id.tableHash) === node)
        }
    }

    static func address(of node: TimerNode) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(node).toOpaque())
    }

    /// Chosen IDs whose hashes agree in the 20 bits a slot keeps: each is found, removed and
    /// told from the other by its node alone.
    @Test func chosenIDsSharingTheirPackedBits() throws {
        var byBits: [UInt64: TimerID] = [:]
        var pairs: [(TimerID, TimerID)] = []
        var number = 0
        while pairs.count < 8 {
            let id = TimerID("clash-\(number)")
            number += 1
            let bits = id.tableHash & UInt64(TimerTable.packedHashLimit - 1)
            if let other = byBits.removeValue(forKey: bits) { pairs.append((other, id)) } else { byBits[bits] = id }
        }
        let table = TimerTable()
        for (first, second) in pairs {
            let nodes = [first, second].map { id in
                TimerNode.make(id: id, deadline: 0, interval: 0, options: .init()) { _ in }
            }
            #expect(table.insert(nodes[0], hash: first.tableHash) == nil)
            #expect(table.find(second, hash: second.tableHash) == nil)
            #expect(table.insert(nodes[1], hash: second.tableHash) == nil)
            #expect(table.find(first, hash: first.tableHash) === nodes[0])
            #expect(table.find(second, hash: second.tableHash) === nodes[1])
            #expect(table.remove(first, hash: first.tableHash) === nodes[0])
            #expect(table.find(second, hash: second.tableHash) === nodes[1])
        }
        #expect(table.count == pairs.count)
        table.removeAll { _ in }
        #expect(table.count == 0)
    }
}
