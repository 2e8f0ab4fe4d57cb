import Dispatch
import PreciseTimer
import PreciseTimerTesting
import Testing

/// The sharded registry seen from outside: a timer in any shard is served in time and in order,
/// whatever the loop last saw of the other shards.
@Suite("Shards")
struct ShardTests {
    /// The loop sleeps until the first far timer while later far timers land in every other
    /// shard without waking it (they are not due before its sleep): the shards stay marked for
    /// the loop. A due timer pushed into such a shard must still ring. (A version that took a
    /// marked shard to mean "a wake-up is on its way" lost this wake-up every time.)
    @Test(
        "a due timer fires while every shard holds far timers the loop has not looked at",
        arguments: Implementation.allCases)
    func dueTimerAmongMarkedShards(_ implementation: Implementation) async throws {
        for round in 0..<5 {
            let timers = try implementation.make()
            defer { timers.shutdown() }
            let fired = Recorder<Tick>()
            try timers.schedule(after: .zero) { fired.append($0) }
            #expect(await fired.wait(forCount: 1).count == 1)
            for _ in 0..<(4 * TimerCore.shardCount) {
                try timers.schedule(after: .seconds(3_600)) { _ in }
            }
            try timers.schedule(after: .zero) { fired.append($0) }
            let count = await fired.wait(forCount: 2, timeout: .seconds(10)).count
            #expect(count == 2, "round \(round): the due timer did not fire")
            guard count == 2 else { return }
        }
    }

    /// 100 000 one-shots spread over seconds put about 1 560 in every shard, past the 1 024 at
    /// which a shard's heap keeps only its nearest timers and files the rest in its far tier. A
    /// fifth are cancelled and two fifths moved, later (left filed early) or earlier (taken out
    /// of whichever tier holds them), while the first ones fire.
    @Test(
        "timers spread over seconds (a far tier in every shard) fire once, never early, at their last deadline, through cancels and moves",
        .timeLimit(.minutes(5)), arguments: Implementation.allCases)
    func farTiersOnTheEngine(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let fired = Recorder<Tick>()
        var random = SplitMix(seed: 31)
        let count = 100_000
        let start = timers.now
        var handles: [TimerHandle] = []
        var deadlines: [UInt64: MonotonicInstant] = [:]
        // When each timer was last registered (scheduled or moved), read after the call returned.
        var registered: [UInt64: MonotonicInstant] = [:]
        for _ in 0..<count {
            let deadline = start.advanced(by: .milliseconds(Int64.random(in: 2_000..<5_000, using: &random)))
            let handle = try timers.scheduleTimer(.at(deadline), id: nil, options: TimerOptions()) { fired.append($0) }
            handles.append(handle)
            deadlines[handle.generation] = deadline
            registered[handle.generation] = timers.now
        }
        var cancelled = Set<UInt64>()
        let victims = handles.shuffled(using: &random).prefix(3 * count / 5)
        let cancelsBegin = timers.now
        for (index, handle) in victims.enumerated() {
            let generation = handle.generation
            switch index % 3 {
            case 0:
                if timers.cancel(handle) { cancelled.insert(generation) }
            case 1:
                let later = deadlines[generation]!.advanced(
                    by: .milliseconds(Int64.random(in: 1..<1_000, using: &random)))
                if try timers.reschedule(handle.id, at: later) {
                    deadlines[generation] = later
                    registered[generation] = timers.now
                }
            default:
                let earlier = max(
                    timers.now.advanced(by: .milliseconds(20)),
                    deadlines[generation]!.advanced(by: .milliseconds(-Int64.random(in: 1..<1_000, using: &random))))
                if try timers.reschedule(handle.id, at: earlier) {
                    deadlines[generation] = earlier
                    registered[generation] = timers.now
                }
            }
        }
        // The first victim is cancelled: unless scheduling ran to within a moment of the earliest
        // deadline (a very loaded machine), it had not fired yet. Later ones may fire and escape
        // their cancel.
        if cancelsBegin.advanced(by: Bounds.lateness) < start.advanced(by: .seconds(2)) {
            #expect(!cancelled.isEmpty)
        }
        let expected = count - cancelled.count
        let ticks = await fired.wait(forCount: expected, timeout: .seconds(120))
        #expect(ticks.count == expected)
        #expect(await Polling.until(timeout: .seconds(10)) { timers.scheduledCount == 0 })
        var calls: [UInt64: Int] = [:]
        var wrong = 0
        var outOfOrder = 0
        // One loop (or one serial queue) calls them in deadline order: a timer left behind in a
        // far tier would fire after a later one, however late the loop runs. A timer registered
        // after that later one was taken may follow it (its deadline had passed); the loop takes
        // a timer a moment before it reads the clock for `firedAt`, a moment that a loaded
        // machine stretches (the loop thread waiting for a core), hence the margin.
        var latest: Tick?
        for tick in fired.values {
            if let latest, tick.scheduledAt < latest.scheduledAt,
                registered[tick.generation]!.advanced(by: Bounds.lateness) < latest.firedAt
            {
                outOfOrder += 1
            }
            if latest == nil || tick.scheduledAt > latest!.scheduledAt { latest = tick }
            calls[tick.generation, default: 0] += 1
            if tick.scheduledAt != deadlines[tick.generation] || tick.firedAt < tick.scheduledAt { wrong += 1 }
        }
        #expect(outOfOrder == 0, "\(outOfOrder) timers fired after a timer due later")
        #expect(calls.count == expected, "every timer not cancelled fired")
        #expect(calls.values.allSatisfy { $0 == 1 }, "no timer fired twice")
        #expect(calls.keys.allSatisfy { !cancelled.contains($0) }, "no cancelled timer fired")
        #expect(wrong == 0, "\(wrong) fired early or at a deadline they no longer had")
    }

    @Test("equal deadlines fire in scheduling order across every shard")
    func equalDeadlinesAcrossShards() throws {
        let timers = TestTimerService()
        let order = Recorder<Int>()
        let deadline = timers.now.advanced(by: .milliseconds(5))
        // Far more timers than shards, so consecutive ones land in different shards.
        for index in 0..<(8 * TimerCore.shardCount) {
            try timers.schedule(at: deadline) { _ in order.append(index) }
        }
        try timers.advance(by: .milliseconds(5))
        #expect(order.values == Array(0..<(8 * TimerCore.shardCount)))
    }

    /// Two threads take turns, each scheduling at one shared deadline and then letting the other
    /// go (a semaphore: the other's schedule happens after). The firing order must be the turns'
    /// order, by ID and without. Numbers drawn in per-thread blocks would break it at the second
    /// turn: each thread's later numbers stay below the other's first.
    @Test("equal deadlines fire in scheduling order across caller threads taking turns")
    func equalDeadlinesAcrossThreads() throws {
        let timers = TestTimerService()
        let order = Recorder<Int>()
        let deadline = timers.now.advanced(by: .milliseconds(5))
        let turns = 4 * TimerCore.shardCount
        let go = [DispatchSemaphore(value: 1), DispatchSemaphore(value: 0)]
        let failures = Recorder<String>()
        runOnThreads(2) { thread in
            for turn in stride(from: thread, to: turns, by: 2) {
                go[thread].wait()
                do {
                    if turn % 4 < 2 {
                        try timers.schedule(at: deadline) { _ in order.append(turn) }
                    } else {
                        try timers.schedule(id: TimerID("turn-\(turn)"), at: deadline) { _ in order.append(turn) }
                    }
                } catch {
                    failures.append("turn \(turn): \(error)")
                }
                go[1 - thread].signal()
            }
        }
        #expect(failures.values.isEmpty)
        try timers.advance(by: .milliseconds(5))
        #expect(order.values == Array(0..<turns))
    }

    @Test("scheduledCount, scheduledIDs and cancelAll cover every shard")
    func countsAcrossShards() throws {
        let timers = TestTimerService()
        let ids = try (0..<1_000).map { _ in try timers.schedule(after: .seconds(1)) { _ in } }
        #expect(timers.scheduledCount == 1_000)
        #expect(Set(timers.scheduledIDs) == Set(ids))
        for id in ids.prefix(300) { #expect(timers.cancel(id)) }
        #expect(timers.scheduledCount == 700)
        timers.cancelAll()
        #expect(timers.scheduledCount == 0 && timers.scheduledIDs.isEmpty)
    }
}
