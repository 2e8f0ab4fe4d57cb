import Dispatch
import PreciseTimerCore
import PreciseTimerTesting
import Synchronization
import Testing

/// Counts the deinits of the objects handlers capture: every handler released exactly once.
private final class Released: Sendable {
    let count = Atomic<Int>(0)
}

private final class Capture: Sendable {
    let released: Released
    init(_ released: Released) { self.released = released }
    deinit { self.released.count.add(1, ordering: .relaxed) }
}

/// glibc's `malloc_usable_size` (declared in `<malloc.h>`, which the Glibc module leaves out).
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer?) -> Int

/// The heap's due run (a storm gathered in one pass) and the sweep's release order: both must be
/// invisible to everything but the clock.
@Suite("Due run and sweep release")
struct DueRunTests {
    private static func node(_ id: TimerID, deadline: Int64, sequence: UInt64) -> TimerNode {
        let node = TimerNode.make(id: id, deadline: deadline, interval: 0, options: .init()) { _ in }
        node.sequence = sequence
        return node
    }

    @Test(
        "a plain one-shot's node fits an 80-byte malloc chunk (96 with a chosen ID); what only some timers have is allocated for them"
    )
    func nodeSize() {
        let generated = TimerNode(generatedNumber: 1_000_000, deadline: 0, interval: 0, options: .init()) { _ in }
        // An 80-byte chunk has 72 usable bytes; the next size up has 88.
        #expect(mallocUsableSize(Unmanaged.passUnretained(generated).toOpaque()) <= 72)
        #expect(generated.id == "timer-1000000" && generated.options == nil)
        let node = Self.node("size", deadline: 0, sequence: 1)
        #expect(node is NamedTimerNode)
        #expect(mallocUsableSize(Unmanaged.passUnretained(node).toOpaque()) <= 88)
        #expect(node.options == nil)
        // A one-shot's count lives in a flag: 0, then 1 once its call began.
        #expect(node.count == 0)
        node.count = 1
        #expect(node.count == 1 && node.catchUp == 0 && node.policy == .skip && node.interval == 0)

        let queue = DispatchQueue(label: "node-size")
        let variants: [TimerNode] = [
            TimerNode.make(id: "every", deadline: 0, interval: 1_000, options: .init()) { _ in },
            TimerNode.make(id: "queue", deadline: 0, interval: 0, options: .init(executor: .queue(queue))) { _ in },
            TimerNode.make(id: "tolerant", deadline: 0, interval: 0, options: .init(), tolerance: 1_000_000) { _ in },
            TimerNode.make(id: "burst", deadline: 0, interval: 0, options: .init(missedTicks: .burst)) { _ in },
        ]
        for variant in variants {
            #expect(variant.options != nil, "\(variant.id)")
        }
        #expect(variants[0].interval == 1_000 && variants[1].queue === queue && variants[2].coalescing > 0)
        #expect(variants[3].policy == .burst)
        variants[0].count = 7
        variants[0].catchUp = 3
        #expect(variants[0].count == 7 && variants[0].catchUp == 3)
    }

    @Test("a heap with a due run pops in firing order through removals and earlier inserts", arguments: [1, 2, 3, 4])
    func heapMatchesModel(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var heap = TimerHeap()
        var pending: [ObjectIdentifier: TimerNode] = [:]
        var nodes: [TimerNode] = []  // The heap does not retain its nodes.
        var sequence: UInt64 = 0
        func insert(deadline: Int64) {
            sequence += 1
            let node = Self.node(TimerID("n\(sequence)"), deadline: deadline, sequence: sequence)
            nodes.append(node)
            pending[ObjectIdentifier(node)] = node
            heap.insert(node)
        }
        // Seeds above 2 spread some deadlines over the whole clock: the run's radix sort then
        // cannot pack its keys and falls back to a comparison sort.
        for index in 0..<300 {
            let wide = seed > 2 && index % 10 == 0
            insert(
                deadline: wide
                    ? -Int64.random(in: 0..<(1 << 62), using: &random) : Int64.random(in: 0..<150, using: &random))
        }
        var now: Int64 = 100
        var popped = 0
        var longestRun = 0
        while !pending.isEmpty {
            heap.gatherDue(notAfter: now)
            longestRun = max(longestRun, heap.dueRunCount)
            #expect(heap.count == pending.count)
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1:
                // A removal anywhere: the run's front, its middle, or the heap proper.
                // Picked from a sorted list: a dictionary's order changes from run to run, and a
                // seed must replay the same removals.
                let victim = pending.values.sorted { $0.sequence < $1.sequence }.randomElement(using: &random)!
                heap.remove(victim)
                #expect(victim.heapIndex == -1)
                pending[ObjectIdentifier(victim)] = nil
            case 2:
                insert(deadline: now - Int64.random(in: 0..<50, using: &random))  // Due, maybe before the run.
            default:
                let expected = pending.values.min { ($0.fireAt, $0.sequence) < ($1.fireAt, $1.sequence) }!
                #expect(heap.min?.sequence == expected.sequence)
                guard expected.fireAt <= now else {
                    now += 50
                    continue
                }
                let node = heap.removeMin()
                #expect(node === expected, "pop \(popped)")
                #expect(node?.heapIndex == -1)
                pending[ObjectIdentifier(expected)] = nil
                popped += 1
            }
        }
        #expect(heap.count == 0 && heap.min == nil)
        #expect(popped > 100)
        #expect(longestRun > 150)  // The storm was served from a run.
    }

    @Test(
        "a heap with a far tier pops in firing order through splits, refills, removals from every tier and storms",
        arguments: [11, 12, 13])
    func farTierMatchesModel(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var heap = TimerHeap()
        var nodes: [TimerNode] = []  // The heap does not retain its nodes.
        // The model: pending nodes in firing order.
        var model: [TimerNode] = []
        var sequence: UInt64 = 0
        func position(_ key: (Int64, UInt64)) -> Int {
            var low = 0
            var high = model.count
            while low < high {
                let middle = (low + high) / 2
                if (model[middle].fireAt, model[middle].sequence) < key { low = middle + 1 } else { high = middle }
            }
            return low
        }
        func insert(deadline: Int64) {
            sequence += 1
            let node = Self.node(TimerID("f\(sequence)"), deadline: deadline, sequence: sequence)
            nodes.append(node)
            model.insert(node, at: position((deadline, sequence)))
            heap.insert(node)
        }
        var now: Int64 = 0
        // Spread over a second: the heap splits, most entries go far.
        for _ in 0..<6_000 { insert(deadline: Int64.random(in: 0..<1_000_000_000, using: &random)) }
        #expect(heap.farCount > 3_000)
        #expect(heap.structureViolations().isEmpty)
        var mostFar = heap.farCount
        var popped = 0
        var operations = 0
        while !model.isEmpty {
            operations += 1
            heap.gatherDue(notAfter: now)
            #expect(heap.count == model.count)
            switch Int.random(in: 0..<20, using: &random) {
            case 0, 1, 2:
                // A removal anywhere: the far tier, the heap, or the due run.
                let victim = model.remove(at: Int.random(in: 0..<model.count, using: &random))
                heap.remove(victim)
                #expect(victim.heapIndex == -1)
            case 3, 4:
                // Far ahead (to the far tier once it exists) or just ahead of the clock.
                let far = Bool.random(using: &random)
                insert(
                    deadline: now + Int64.random(in: far ? 100_000_000..<2_000_000_000 : 0..<1_000_000, using: &random))
            case 5 where operations % 500 == 0:
                // A storm: many timers at one instant, soon.
                let instant = now + 500
                for _ in 0..<300 { insert(deadline: instant) }
            default:
                #expect(heap.min?.sequence == model.first?.sequence)
                guard let expected = model.first, expected.fireAt <= now else {
                    now += 2_000_000
                    continue
                }
                let node = heap.removeMin()
                #expect(node === expected, "pop \(popped)")
                #expect(node?.heapIndex == -1)
                model.removeFirst()
                popped += 1
            }
            mostFar = max(mostFar, heap.farCount)
            if operations % 211 == 0 {
                let violations = heap.structureViolations()
                #expect(violations.isEmpty, "\(violations.prefix(3))")
                if !violations.isEmpty { return }
            }
        }
        #expect(heap.count == 0 && heap.min == nil && heap.farCount == 0)
        #expect(heap.structureViolations().isEmpty)
        #expect(popped > 3_000)
        #expect(heap.capacity < 4_096)  // Drained, it gave its peak storage back.
    }

    @Test("timers due within a millisecond stay in the heap (one due run); timers spread over seconds go far")
    func farTierSplitsOnlySpreadDeadlines() {
        var random = SplitMix(seed: 5)
        var nodes: [TimerNode] = []  // The heaps do not retain their nodes.
        func heap(spread: Int64) -> TimerHeap {
            var heap = TimerHeap()
            for index in 0..<3_000 {
                let deadline = 1_000_000_000 + Int64.random(in: 0..<spread, using: &random)
                let node = Self.node(TimerID("s\(index)"), deadline: deadline, sequence: UInt64(index + 1))
                nodes.append(node)
                heap.insert(node)
            }
            return heap
        }
        let storm = heap(spread: 500_000)
        #expect(storm.farCount == 0)
        let spread = heap(spread: 10_000_000_000)
        #expect(spread.farCount > 2_000)
        #expect(spread.count == 3_000)
        #expect(spread.structureViolations().isEmpty)
    }

    @Test("a heap too large to gather under the lock in bounded time is popped one by one, in order")
    func largeHeapIsNotGathered() {
        var heap = TimerHeap()
        let count = TimerHeap.maximumGather + 1
        let nodes = (0..<count).map {
            // One deadline: the far tier cannot take any of them, so the heap itself is too large.
            Self.node(TimerID("l\($0)"), deadline: 50, sequence: UInt64(($0 * 7919) % count + 1))
        }
        for node in nodes { heap.insert(node) }
        #expect(heap.farCount == 0)
        heap.gatherDue(notAfter: 1_000)
        #expect(heap.dueRunCount == 0)
        var last: (Int64, UInt64) = (.min, 0)
        while let node = heap.removeMin() {
            #expect(last < (node.fireAt, node.sequence))
            last = (node.fireAt, node.sequence)
        }
        #expect(heap.count == 0)
    }

    @Test("a registry storm fires in scheduling order while a fire cancels, reschedules and adds due timers")
    func registryStorm() throws {
        var random = SplitMix(seed: 7)
        var registry = ShardState()
        var sequence: UInt64 = 0
        var model: [TimerID: (deadline: Int64, sequence: UInt64)] = [:]
        func add(_ id: TimerID, at deadline: Int64) throws {
            sequence += 1
            let node = Self.node(id, deadline: deadline, sequence: sequence)
            _ = try registry.add(node)
            model[id] = (deadline, sequence)
        }
        for index in 0..<500 { try add(TimerID("s\(index)"), at: 1_000 + Int64(index % 7)) }
        _ = registry.next(now: 0)
        #expect(registry.dueRunCount == 0)
        var fired = 0
        var extra = 0
        while case .fire(let fire) = registry.next(now: 2_000) {
            let expected = model.min {
                ($0.value.deadline, $0.value.sequence) < ($1.value.deadline, $1.value.sequence)
            }!
            #expect(fire.node.id == expected.key)
            if fired == 0 { #expect(registry.dueRunCount == 499) }
            let call = registry.begin(fire)
            #expect(call != nil)
            model[fire.node.id] = nil
            fired += 1
            // What a handler might do between two fires of the storm.
            let other = model.keys.sorted { $0.rawValue < $1.rawValue }.randomElement(using: &random)  // Replayable.
            switch Int.random(in: 0..<8, using: &random) {
            case 0:
                if let other {
                    let ended = registry.cancel(other, hash: other.tableHash)
                    #expect(ended.node != nil && ended.handler != nil)
                    model[other] = nil
                }
            case 1:
                if let other {
                    let deadline = Int64.random(in: 900..<3_000, using: &random)
                    let (found, _) = registry.reschedule(other, hash: other.tableHash, to: deadline, now: 2_000)
                    #expect(found)
                    model[other]!.deadline = deadline
                }
            case 2:
                extra += 1
                try add(TimerID("x\(extra)"), at: Int64.random(in: 0..<2_000, using: &random))
            default:
                break
            }
        }
        #expect(model.values.allSatisfy { $0.deadline > 2_000 })
        #expect(registry.heapCount == model.count && registry.count == model.count)
        #expect(fired > 300)
    }

    @Test(
        "a close releases every handler exactly once, whatever the sequences",
        arguments: ["dense", "sparse", "shared"])
    func sweepReleasesEveryHandler(sequences: String) throws {
        let released = Released()
        var registries = (0..<4).map { _ in ShardState() }
        var total = 0
        for index in 0..<400 {
            let capture = Capture(released)
            let id = TimerID("t\(index)")
            let node = TimerNode.make(id: id, deadline: Int64(index % 13), interval: 0, options: .init()) { _ in
                withExtendedLifetime(capture) {}
            }
            node.sequence =
                switch sequences {
                case "dense": UInt64(index + 1)
                case "sparse": UInt64(index) * 1_000_003
                default: UInt64(index / 3)  // Hand-made nodes sharing sequences.
                }
            _ = try registries[index % 4].add(node)
            total += 1
        }
        // Paused and taken timers are in the table only.
        let paused = registries[0].pause(TimerID("t0"), hash: TimerID("t0").tableHash, now: 0)
        #expect(paused)
        _ = registries[1].next(now: 100)
        var sweeps = ShardState.Swept()
        for index in registries.indices {
            guard let swept = registries[index].close(.shutDown) else {
                Issue.record("registry \(index) was closed already")
                continue
            }
            sweeps.absorb(swept)
        }
        #expect(sweeps.count == total)
        #expect(released.count.load(ordering: .relaxed) == 0)
        sweeps.release()
        #expect(released.count.load(ordering: .relaxed) == total)
    }

    /// The loop serves a storm by one clock reading per fire; a repeating timer after a slow
    /// handler must still count the periods that handler took, as a new reading would.
    @Test("a repeating timer served after a slow handler in the same pass is taken at the time after it")
    func repeatingAfterSlowHandler() throws {
        let timers = TestTimerService()
        let start = timers.now
        let due = start.advanced(by: .milliseconds(10))
        // Scheduled first, so it runs first at the shared deadline, and runs for 50 ms.
        try timers.schedule(id: "slow", at: due) { _ in
            timers.moveClock(to: start.advanced(by: .milliseconds(60)))
        }
        let ticks = Mutex<[Tick]>([])
        try timers.scheduleRepeating(id: "beat", every: .milliseconds(10), startingAt: due) { tick in
            ticks.withLock { $0.append(tick) }
        }
        try timers.advance(to: due)
        let seen = ticks.withLock { $0 }
        try #require(seen.count == 1)
        // `.skip`: the five periods the slow handler took are reported, and the call answers the
        // latest grid point that passed (60 ms), not the one the pass began at (10 ms).
        let afterSlowHandler = start.advanced(by: .milliseconds(60))
        let nextGridPoint = start.advanced(by: .milliseconds(70))
        #expect(seen[0].missed == 5)
        #expect(seen[0].scheduledAt == afterSlowHandler)
        #expect(seen[0].firedAt == afterSlowHandler)
        #expect(timers.nextDeadline == nextGridPoint)
    }
}
