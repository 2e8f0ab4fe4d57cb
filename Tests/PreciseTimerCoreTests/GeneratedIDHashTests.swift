import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// Generated IDs are hashed from their number (``TimerID/tableHash(generatedNumber:)``) and found
/// without comparing strings; every other ID is hashed as a string.
@Suite("Generated IDs: the table hash from the number")
struct GeneratedIDHashTests {
    @Test("only the canonical form has a number: timer-, digits, no leading zero, below 2⁶⁴")
    func canonicalForm() {
        #expect(TimerID("timer-1").canonicalGeneratedNumber == 1)
        #expect(TimerID("timer-18446744073709551615").canonicalGeneratedNumber == .max)
        for other in [
            "timer-", "timer-0", "timer-007", "timer-1x", "timer-18446744073709551616", "Timer-1", "timer1",
            "timer-١", "session-1", "",
        ] {
            #expect(TimerID(other).canonicalGeneratedNumber == nil, "\(other)")
        }
    }

    @Test("a generated ID is spelled timer-N for every number, and parses back to it")
    func spelling() {
        var powers: [UInt64] = [1]
        while powers.last! <= UInt64.max / 10 { powers.append(powers.last! * 10) }
        // Powers of ten and of two, and their neighbours: the digit count comes from the bit length.
        let twos = (0..<64).map { UInt64(1) << $0 }
        let numbers =
            [0, UInt64.max, 123_456_789] + powers + powers.map { $0 - 1 } + powers.map { $0 + 1 } + twos
            + twos.map { $0 - 1 } + twos.map { $0 + 1 }
        for number in numbers {
            let id = TimerID(generatedNumber: number)
            #expect(id.rawValue == "timer-\(number)")
            #expect(id.isGenerated)
            #expect(id.canonicalGeneratedNumber == (number == 0 ? nil : number), "timer-0 is not canonical")
        }
    }

    @Test("a generated ID's hash is its number's, with the marker bit; every other ID's never has the bit")
    func markerBit() throws {
        for number: UInt64 in [1, 2, 63, 64, 1_000_000, 1 << 40, (1 << 61) - 1] {
            let id = TimerID(generatedNumber: number)
            let hash = try #require(TimerID.tableHash(generatedNumber: number))
            #expect(id.tableHash == hash)
            #expect(hash & TimerID.generatedHashBit != 0)
            #expect(hash >> 58 == number & 63, "the shard is the number's low six bits")
        }
        // Beyond 2⁶¹ the number does not fit: the string is hashed, as for any ID.
        #expect(TimerID.tableHash(generatedNumber: 1 << 61) == nil)
        #expect(TimerID(generatedNumber: 1 << 61).tableHash & TimerID.generatedHashBit == 0)
        for other in ["timer-007", "timer-0", "heartbeat", "session-42.expiry", "timer-", "e\u{301}"] {
            #expect(TimerID(other).tableHash & TimerID.generatedHashBit == 0, "\(other)")
        }
        // Equal IDs hash equally, however spelled (canonical equivalence).
        #expect(TimerID("e\u{301}").tableHash == TimerID("\u{E9}").tableHash)
    }

    @Test("the next group's hash, from a hash alone, is the hash of the number 4 × shardCount on")
    func nextGroup() throws {
        let step = 4 * UInt64(TimerCore.shardCount)
        var generator = SystemRandomNumberGenerator()
        let numbers =
            Array(1...UInt64(4_096))
            + (0..<4_096).map { _ in UInt64.random(in: 1..<(1 << 61) - step, using: &generator) }
        for number in numbers {
            let hash = try #require(TimerID.tableHash(generatedNumber: number))
            #expect(
                TimerID.tableHash(nextGroupAfter: hash) == TimerID.tableHash(generatedNumber: number + step),
                "\(number)")
        }
    }

    @Test("distinct numbers, distinct hashes; a run of consecutive numbers shares no home slot in its shard")
    func injective() throws {
        var seen = Set<UInt64>()
        let count: UInt64 = 64 * 4_096
        for number in 0..<count {
            #expect(seen.insert(try #require(TimerID.tableHash(generatedNumber: number))).inserted)
        }
        // Per shard 4 096 consecutive numbers (0 is never generated, but hashes like the rest), 1 024 groups of four: in a table of 1 024 groups
        // (4 096 slots) each group has a home of its own.
        let groupMask: UInt64 = 1_023
        var homes: [UInt64: Set<UInt64>] = [:]
        for number in 0..<count {
            let hash = try #require(TimerID.tableHash(generatedNumber: number))
            homes[hash >> 58, default: []].insert((hash >> 2) & groupMask)
        }
        #expect(homes.count == 64)
        #expect(homes.values.allSatisfy { $0.count == 1_024 })
    }

    @Test("the table tells generated IDs apart by hash alone, and a non-canonical twin names nothing")
    func tableLookups() throws {
        let table = TimerTable()
        var nodes: [TimerNode] = []
        for number: UInt64 in 1...5_000 {
            let node = TimerNode.make(id: TimerID(generatedNumber: number), deadline: 0, interval: 0, options: .init())
            {
                _ in
            }
            #expect(table.insert(node, hash: node.hash) == nil)
            nodes.append(node)
        }
        let named = TimerNode.make(id: "timer-7-named", deadline: 0, interval: 0, options: .init()) { _ in }
        #expect(table.insert(named, hash: named.hash) == nil)
        for node in nodes {
            #expect(table.find(node.id, hash: node.id.tableHash) === node)
        }
        #expect(table.find("timer-007", hash: TimerID("timer-007").tableHash) == nil)
        #expect(table.find("timer-5001", hash: TimerID("timer-5001").tableHash) == nil)
        #expect(table.find("timer-7-named", hash: TimerID("timer-7-named").tableHash) === named)
        // A duplicate generated ID is refused by hash alone.
        let twin = TimerNode.make(id: "timer-42", deadline: 0, interval: 0, options: .init()) { _ in }
        #expect(table.insert(twin, hash: twin.hash) === nodes[41])
        for node in nodes.prefix(2_500) {
            #expect(table.remove(node.id, hash: node.hash) === node)
        }
        for node in nodes.dropFirst(2_500) {
            #expect(table.find(node.id, hash: node.hash) === node)
        }
        #expect(table.count == 2_501)
        table.removeAll { _ in }
    }

    @Test("the table removes a node by identity: a twin under the same ID removes nothing")
    func removalByIdentity() throws {
        let table = TimerTable()
        var nodes: [TimerNode] = []
        for name in (1...3_000).map({ $0 % 3 == 0 ? TimerID("chosen-\($0)") : TimerID(generatedNumber: UInt64($0)) }) {
            let node = TimerNode.make(id: name, deadline: 0, interval: 0, options: .init()) { _ in }
            #expect(table.insert(node, hash: node.hash) == nil)
            nodes.append(node)
        }
        for node in nodes.prefix(100) {
            let twin = TimerNode.make(id: node.id, deadline: 0, interval: 0, options: .init()) { _ in }
            #expect(table.remove(twin, hash: twin.hash) == nil)
        }
        #expect(table.count == 3_000)
        for node in nodes where node.id.rawValue.hasSuffix("5") {
            #expect(table.remove(node, hash: node.hash) === node)
            #expect(table.remove(node, hash: node.hash) == nil)
        }
        for node in nodes {
            let removed = node.id.rawValue.hasSuffix("5")
            #expect((table.find(node.id, hash: node.hash) === node) == !removed)
        }
        table.removeAll { _ in }
    }

    @Test("on a service: cancel by a generated ID's string, and its non-canonical twin cancels nothing")
    func onAService() throws {
        let timers = TestTimerService()
        var ids: [TimerID] = []
        for _ in 0..<1_000 { ids.append(try timers.schedule(after: .seconds(10)) { _ in }) }
        let seventh = ids[6]
        #expect(seventh == "timer-7")
        #expect(!timers.cancel("timer-007"))
        #expect(timers.isScheduled(seventh))
        #expect(timers.cancel(TimerID(String(seventh.rawValue))))
        #expect(!timers.isScheduled(seventh))
        #expect(timers.scheduledCount == 999)
    }

    @Test("a node named by its sequence hashes from the number as from the string, past 2⁶¹ too")
    func nodeHashFromSequence() {
        for number: UInt64 in [1, 7, 64, 1_000_003, 1 << 61 - 1, 1 << 61, UInt64.max] {
            let id = TimerID(generatedNumber: number)
            let node = TimerNode(generatedNumber: number, deadline: 0, interval: 0, options: .init()) { _ in }
            node.place(hash: id.tableHash)
            #expect(node.id == id)
            #expect(node.isNamedBySequence)
            #expect(node.hash == id.tableHash, "\(id)")
            #expect(UInt64(node.shard) == id.tableHash >> TimerCore.shardShift)
            #expect(node.isNamed(id, hash: id.tableHash))
            #expect(
                !node.isNamed(
                    TimerID(generatedNumber: number &+ 1), hash: TimerID(generatedNumber: number &+ 1).tableHash))
        }
        // A chosen ID is stored and hashed from its string, whatever the sequence.
        let named = NamedTimerNode(id: "session-9", deadline: 0, interval: 0, options: .init()) { _ in }
        named.sequence = 9
        named.place(hash: TimerID("session-9").tableHash)
        #expect(named.id == "session-9")
        #expect(!named.isNamedBySequence)
        #expect(named.hash == TimerID("session-9").tableHash)
        #expect(named.isNamed("session-9", hash: TimerID("session-9").tableHash))
        #expect(!named.isNamed("session-90", hash: TimerID("session-9").tableHash))
        #expect(!named.isNamed("timer-9", hash: TimerID("timer-9").tableHash))
    }
}
