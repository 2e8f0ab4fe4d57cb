import PreciseTimerCore
import PreciseTimerCompat
import PreciseTimerTesting
import Synchronization
import Testing

/// Scheduling order for the registry tests, as ``TimerCore`` draws it: one counter for all.
private let testSequence = Atomic<UInt64>(0)

/// The registry's transitions on their own: IDs, wake-up decisions, firing order, compaction.
extension ShardState {
    /// Adds a timer the way `TimerCore` does: node first, named, given its sequence, then registered.
    fileprivate mutating func add(
        id: TimerID, deadline: Int64, interval: Int64, options: TimerOptions,
        handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> (id: TimerID, wakeLoop: Bool) {
        let node = TimerNode.make(id: id, deadline: deadline, interval: interval, options: options, handler: handler)
        node.sequence = testSequence.wrappingAdd(1, ordering: .relaxed).newValue
        let wake = try self.add(node)
        return (node.id, wake)
    }

    fileprivate mutating func cancel(_ id: TimerID) -> (found: Bool, handler: TimerNode.StoredHandler?) {
        let ended = self.cancel(id, hash: id.tableHash)
        return (ended.node != nil, ended.handler)
    }
}

@Suite("ShardState")
struct TimerRegistryTests {
    private let noop: @Sendable (Tick) -> Void = { _ in }

    @Test("generated IDs are the timer's generation, never reused; their form is reserved")
    func generatedIDs() throws {
        let timers = TestTimerService()
        let first = try timers.scheduleTimer(.after(.seconds(1))) { _ in }
        try timers.schedule(id: "named", after: .seconds(1)) { _ in }
        let third = try timers.scheduleTimer(.after(.seconds(1))) { _ in }
        #expect(first == TimerHandle(id: "timer-1", generation: 1))
        #expect(third == TimerHandle(id: "timer-3", generation: 3))
        #expect(first.id.isGenerated && !TimerID("named").isGenerated)
        // A caller may not take the form, even for a number not handed out yet: a stale name
        // kept from `execTask` could otherwise cancel a timer someone named.
        #expect(throws: PreciseTimerError(.reservedID, id: "timer-4")) {
            try timers.schedule(id: "timer-4", after: .seconds(1)) { _ in }
        }
        #expect(timers.cancel(first))
        let fourth = try timers.schedule(after: .seconds(1)) { _ in }
        #expect(fourth == "timer-4")
        #expect(timers.scheduledCount == 3)
    }

    @Test("a duplicate ID throws and leaves the registry unchanged")
    func badIDs() throws {
        var registry = ShardState()
        _ = try registry.add(id: "a", deadline: 10, interval: 0, options: .init(), handler: self.noop)
        #expect(throws: PreciseTimerError(.duplicateID, id: "a")) {
            _ = try registry.add(id: "a", deadline: 5, interval: 0, options: .init(), handler: self.noop)
        }
        #expect(registry.timers.count == 1)
        #expect(registry.heapCount == 1)
        guard case .idle(let next) = registry.next(now: 0) else {
            Issue.record("nothing should be due")
            return
        }
        #expect(next == 10)
    }

    @Test("a push reports only when it comes before what the loop is sure to look at")
    func wakeDecisions() throws {
        var registry = ShardState()
        #expect(try registry.add(id: "a", deadline: 100, interval: 0, options: .init(), handler: self.noop).wakeLoop)
        // Earlier than the reported 100: the loop must be told again; later than 50: not.
        #expect(try registry.add(id: "b", deadline: 50, interval: 0, options: .init(), handler: self.noop).wakeLoop)
        #expect(try !registry.add(id: "b2", deadline: 70, interval: 0, options: .init(), handler: self.noop).wakeLoop)
        guard case .idle(50) = registry.next(now: 0) else {
            Issue.record("expected to sleep until 50")
            return
        }
        #expect(try !registry.add(id: "c", deadline: 60, interval: 0, options: .init(), handler: self.noop).wakeLoop)
        #expect(try registry.add(id: "d", deadline: 40, interval: 0, options: .init(), handler: self.noop).wakeLoop)
    }

    @Test("equal deadlines pop in scheduling order, earlier deadlines first")
    func ordering() throws {
        var registry = ShardState()
        for (name, deadline) in [("late", 30), ("x1", 20), ("x2", 20), ("early", 10), ("x3", 20)] {
            _ = try registry.add(
                id: TimerID(name), deadline: Int64(deadline), interval: 0, options: .init(),
                handler: self.noop)
        }
        var fired: [TimerID] = []
        while case .fire(let fire) = registry.next(now: 100) {
            fired.append(fire.node.id)
            #expect(registry.begin(fire) != nil)
        }
        #expect(fired == ["early", "x1", "x2", "x3", "late"])
        #expect(registry.timers.count == 0)
    }

    @Test("cancel and pause take the entry out of the heap at once (a later reschedule leaves it, lazily); order holds")
    func eagerRemoval() throws {
        var registry = ShardState()
        for index in 0..<10_000 {
            _ = try registry.add(
                id: TimerID("t\(index)"), deadline: Int64(10_000 - index), interval: 0, options: .init(),
                handler: self.noop)
        }
        // Cancel every other one, from the middle of the heap as well as its ends.
        for index in stride(from: 0, to: 10_000, by: 2) {
            #expect(registry.cancel(TimerID("t\(index)")).found)
            #expect(registry.heapCount == registry.timers.count, "no stale entry stays behind")
        }
        let paused = registry.pause(TimerID("t1"), hash: TimerID("t1").tableHash, now: 0)
        let moved = registry.reschedule(TimerID("t3"), hash: TimerID("t3").tableHash, to: 1_000_000, now: 0)
        #expect(paused && moved.found)
        #expect(registry.heapCount == 4_999)
        var deadlines: [Int64] = []
        while case .fire(let fire) = registry.next(now: .max) {
            deadlines.append(fire.scheduledAt)
            #expect(registry.begin(fire) != nil)
        }
        #expect(deadlines.count == 4_999)
        #expect(deadlines == deadlines.sorted(), "the heap stays ordered through removals anywhere")
        #expect(deadlines.last == 1_000_000)
    }

    @Test("cancel hands the handler back for release outside the lock")
    func cancelReturnsHandler() throws {
        var registry = ShardState()
        let canary = Canary()
        let probe = WeakProbe(canary)
        _ = try registry.add(id: "a", deadline: 10, interval: 0, options: .init()) { _ in _ = canary }
        var result = registry.cancel("a")
        #expect(result.found)
        #expect(result.handler != nil)
        #expect(!probe.isReleased)
        result.handler = nil
        _ = consume canary
        #expect(probe.isReleased)
        #expect(!registry.cancel("a").found)
    }

    @Test("a timer cancelled between being taken and its call never runs")
    func cancelBetweenTakeAndBegin() throws {
        var registry = ShardState()
        _ = try registry.add(id: "once", deadline: 10, interval: 0, options: .init(), handler: self.noop)
        _ = try registry.add(id: "every", deadline: 10, interval: 5, options: .init(), handler: self.noop)
        var taken: [ShardState.Fire] = []
        while case .fire(let fire) = registry.next(now: 10) { taken.append(fire) }
        #expect(taken.count == 2)
        #expect(registry.timers.count == 2, "taken timers are still registered until their call begins")
        #expect(registry.cancel("once").found)
        #expect(registry.cancel("every").found)
        #expect(taken.allSatisfy { registry.begin($0) == nil })
        #expect(taken.allSatisfy { !registry.complete($0, firedAt: 10, now: 10).wake })
        #expect(registry.timers.count == 0 && registry.heapCount == 0)
    }

    @Test("a registry drained one cancel at a time gives its peak memory back")
    func drainedRegistryShrinks() throws {
        var registry = ShardState()
        let count = 10_000
        for index in 0..<count {
            _ = try registry.add(
                id: TimerID("t\(index)"), deadline: Int64(1_000 + index), interval: 0, options: .init(),
                handler: self.noop)
        }
        let peak = registry.capacities
        #expect(peak.table >= count && peak.heap >= count)
        // Cancelled from the middle out, so the heap's holes are not always its last entries.
        for index in (0..<count).sorted(by: { abs($0 - count / 2) < abs($1 - count / 2) }) {
            #expect(registry.cancel(TimerID("t\(index)")).found)
        }
        #expect(registry.count == 0)
        let drained = registry.capacities
        #expect(drained.table <= 64, "the table kept \(drained.table) slots of its peak \(peak.table)")
        #expect(
            drained.heap <= 2_048 && drained.heap < peak.heap,
            "the heap kept \(drained.heap) entries of its peak \(peak.heap)")
        // Still a working registry after shrinking.
        _ = try registry.add(id: "again", deadline: 5, interval: 0, options: .init(), handler: self.noop)
        guard case .fire(let fire) = registry.next(now: 10) else {
            Issue.record("the timer added after the drain did not come due")
            return
        }
        #expect(fire.node.id == "again")
    }

    @Test(
        "a shard with a far tier: cancels, pauses, touches and earlier moves in every tier; fires in order, never early",
        arguments: [21, 22])
    func farTierShard(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        var registry = ShardState()
        // The model: live timers in firing order, and the same timers in a pool to pick from.
        var order: [(deadline: Int64, sequence: UInt64, id: TimerID)] = []
        var pool: [TimerID] = []
        var place: [TimerID: (deadline: Int64, sequence: UInt64, pool: Int)] = [:]
        var paused: [(id: TimerID, sequence: UInt64, left: Int64)] = []
        func position(_ deadline: Int64, _ sequence: UInt64) -> Int {
            var low = 0
            var high = order.count
            while low < high {
                let middle = (low + high) / 2
                if (order[middle].deadline, order[middle].sequence) < (deadline, sequence) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            return low
        }
        func track(_ id: TimerID, deadline: Int64, sequence: UInt64) {
            order.insert((deadline, sequence, id), at: position(deadline, sequence))
            place[id] = (deadline, sequence, pool.count)
            pool.append(id)
        }
        func untrack(_ id: TimerID) -> (deadline: Int64, sequence: UInt64) {
            let entry = place.removeValue(forKey: id)!
            order.remove(at: position(entry.deadline, entry.sequence))
            let last = pool.removeLast()
            if last != id {
                pool[entry.pool] = last
                place[last]!.pool = entry.pool
            }
            return (entry.deadline, entry.sequence)
        }
        var named: UInt64 = 0
        var now: Int64 = 0
        func add(after delay: Int64) throws {
            named += 1
            let id = TimerID("f\(named)")
            let node = TimerNode.make(id: id, deadline: now + delay, interval: 0, options: .init(), handler: self.noop)
            node.sequence = named
            _ = try registry.add(node)
            track(id, deadline: now + delay, sequence: named)
        }
        // Spread over ten seconds: most go to the far tier.
        for _ in 0..<5_000 { try add(after: Int64.random(in: 1_000_000..<10_000_000_000, using: &random)) }
        #expect(registry.farCount > 3_000)
        #expect(registry.invariantViolations().isEmpty)
        var fired = 0
        var operations = 0
        while !order.isEmpty || !paused.isEmpty {
            operations += 1
            let roll = Int.random(in: 0..<16, using: &random)
            if roll < 6, !pool.isEmpty {
                let victim = pool[Int.random(in: 0..<pool.count, using: &random)]
                let hash = victim.tableHash
                switch roll {
                case 0:
                    #expect(registry.cancel(victim).found)
                    _ = untrack(victim)
                case 1:
                    // Later: lazy (the entry stays filed early, in whichever tier it is).
                    let (deadline, sequence) = untrack(victim)
                    let later = deadline + Int64.random(in: 0..<3_000_000_000, using: &random)
                    #expect(registry.reschedule(victim, hash: hash, to: later, now: now).found)
                    track(victim, deadline: later, sequence: sequence)
                case 2:
                    // Earlier (never before now): the entry moves at once.
                    let (deadline, sequence) = untrack(victim)
                    let earlier = max(now, deadline - Int64.random(in: 0..<3_000_000_000, using: &random))
                    #expect(registry.reschedule(victim, hash: hash, to: earlier, now: now).found)
                    track(victim, deadline: earlier, sequence: sequence)
                case 3:
                    let found = registry.pause(victim, hash: hash, now: now)
                    #expect(found)
                    let (deadline, sequence) = untrack(victim)
                    paused.append((victim, sequence, max(0, deadline - now)))
                default:
                    try add(after: Int64.random(in: 0..<10_000_000_000, using: &random))
                }
            } else if roll == 6 && !paused.isEmpty || order.isEmpty {
                // Resume the oldest paused timer (all of them once nothing else is left).
                let resuming = order.isEmpty ? paused : [paused[0]]
                for resumed in resuming {
                    #expect(registry.resume(resumed.id, hash: resumed.id.tableHash, now: now).resumed)
                    track(resumed.id, deadline: now + resumed.left, sequence: resumed.sequence)
                }
                paused.removeFirst(resuming.count)
            } else {
                switch registry.next(now: now) {
                case .fire(let fire):
                    let id = fire.node.id
                    #expect(id == order.first?.id, "fire \(fired)")
                    #expect(fire.node.deadline == place[id]?.deadline, "\(id) fired at another deadline")
                    #expect(fire.node.deadline <= now)
                    #expect(registry.begin(fire) != nil)
                    _ = untrack(id)
                    fired += 1
                case .idle(let next):
                    #expect(next == order.first?.deadline, "the shard sleeps until its earliest deadline")
                    guard let next, next > now else { break }
                    now = next
                }
            }
            if operations % 397 == 0 {
                let violations = registry.invariantViolations()
                #expect(violations.isEmpty, "\(violations.prefix(3))")
                if !violations.isEmpty { return }
            }
        }
        #expect(fired > 2_000)
        #expect(registry.count == 0 && registry.heapCount == 0)
        #expect(registry.capacities.heap <= 2_048, "a drained shard gave its far tier back")
    }

    @Test("a registry the loop drains keeps its tables through the storm and gives them back once idle")
    func loopDrainShrinksWhenIdle() throws {
        let timers = TestTimerService()
        let core = timers.core
        let empty = core.capacities.table  // Every shard's smallest table.
        let fired = Atomic<Int>(0)
        let sparseDuringStorm = Atomic<Int>(0)
        let count = 20_000
        for index in 0..<count {
            try timers.schedule(after: .milliseconds(1)) { _ in
                fired.add(1, ordering: .relaxed)
                // Near the end of the storm every table is sparse, and still its full size.
                if index == count - 1, core.capacities.table > 4 * empty {
                    sparseDuringStorm.add(1, ordering: .relaxed)
                }
            }
        }
        let peak = core.capacities.table
        #expect(peak >= count)
        try timers.advance(by: .milliseconds(2))
        #expect(fired.load(ordering: .relaxed) == count)
        #expect(sparseDuringStorm.load(ordering: .relaxed) == 1, "the tables shrank while handlers waited")
        #expect(core.capacities.table == empty, "the drained tables kept \(core.capacities.table) slots of \(peak)")
    }

    #if DEBUG
        @Test(
            "a sweep dropped without release stops a debug build (its timers would leak)",
            .disabled(if: Sanitizers.threadSanitizerIsActive, "exit tests fork: skipped under ThreadSanitizer"))
        func droppedSweep() async {
            await #expect(processExitsWith: .failure) {
                var registry = ShardState()
                let node = TimerNode.make(id: "a", deadline: 10, interval: 0, options: .init()) { _ in }
                _ = try? registry.add(node)
                _ = registry.close(.shutDown)
            }
        }
    #endif

    @Test("shutdown refuses new timers and happens once")
    func shutdown() throws {
        var registry = ShardState()
        _ = try registry.add(id: "a", deadline: 10, interval: 0, options: .init(), handler: self.noop)
        if let swept = registry.close(.shutDown) {
            #expect(swept.count == 1)
            swept.release()
        } else {
            Issue.record("the first close sweeps the registry")
        }
        if let again = registry.close(.shutDown) {
            Issue.record("closes once, but a second close swept \(again.count) timers")
            again.release()
        }
        #expect(throws: PreciseTimerError(.shutDown, id: "b")) {
            _ = try registry.add(id: "b", deadline: 5, interval: 0, options: .init(), handler: self.noop)
        }
    }
}
