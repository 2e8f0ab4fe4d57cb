import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerTesting
import Testing

extension ControlConformanceTests {
    @Test(
        "a paused repeating timer reports no missed periods for the pause, then runs at its rate",
        arguments: Implementation.allCases)
    func pauseRepeating(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "beat", every: .milliseconds(10)) { ticks.append($0) }
        await ticks.wait(forCount: 2)
        #expect(timers.pause("beat"))
        // A barrier on the loop: once it runs, a call begun before the pause has landed.
        let barrier = Recorder<Bool>()
        try timers.schedule(after: .zero) { _ in barrier.append(true) }
        await barrier.wait(forCount: 1)
        let countAtPause = ticks.count
        await pause(.milliseconds(150))
        #expect(ticks.count == countAtPause, "fired while paused")
        let resumedAt = timers.now
        #expect(timers.resume("beat"))
        let values = await ticks.wait(forCount: countAtPause + 3)
        timers.cancel("beat")
        // Periods a loaded machine makes it miss after the resume are fine; the 150 ms paused
        // span (15 periods) must not count: every missed period lies after `resumedAt`.
        let first = try #require(values.dropFirst(countAtPause).first)
        #expect(
            .milliseconds(10) * Int(first.missed) <= first.firedAt - resumedAt,
            "the paused span counted as missed: \(first.missed) after \(first.firedAt - resumedAt)")
        #expect(values.map(\.count) == Array(1...UInt64(values.count)))
    }

    @Test(
        "pause and resume while the handler runs: every tick names its timer (a race ThreadSanitizer caught once)",
        arguments: Implementation.allCases, [nil, "named"] as [TimerID?])
    func pauseWhileRunning(_ implementation: Implementation, _ chosen: TimerID?) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ids = Recorder<TimerID>()
        // The handler reads its tick's ID (built from the node, outside every lock) while pause
        // writes the node's flags (under its shard's lock).
        let handle = try timers.scheduleTimer(.every(.milliseconds(1)), id: chosen, options: .init()) { tick in
            ids.append(tick.id)
            usleep(200)
        }
        await ids.wait(forCount: 1)
        let until = timers.now.advanced(by: .milliseconds(100))
        while timers.now < until {
            #expect(timers.pause(handle.id))
            #expect(timers.resume(handle.id))
        }
        #expect(timers.cancel(handle))
        let seen = ids.values
        #expect(!seen.isEmpty && seen.allSatisfy { $0 == handle.id }, "\(Set(seen))")
    }

    @Test("cancel of a paused timer releases its handler", arguments: Implementation.untimed)
    func cancelPaused(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        var canary: Canary? = Canary()
        let probe = WeakProbe(canary!)
        try timers.scheduleRepeating(id: "paused", every: .seconds(1)) { [canary] _ in _ = canary }
        canary = nil
        #expect(timers.pause("paused"))
        #expect(!probe.isReleased)
        #expect(timers.cancel("paused"))
        #expect(probe.isReleased)
        #expect(!timers.isPaused("paused"))
    }

    @Test(
        "a fire waiting for its queue never runs once cancel, pause or reschedule returned",
        arguments: Implementation.allCases, ["cancel", "pause", "reschedule"])
    func waitingFireDropped(_ implementation: Implementation, _ operation: String) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let queue = DispatchQueue(label: "blocked")
        let gate = DispatchSemaphore(value: 0)
        let calls = Recorder<Tick>()
        queue.async { gate.wait() }  // The timer's fire will wait behind this.
        try timers.schedule(id: "hop", after: .milliseconds(5), options: .init(executor: .queue(queue))) {
            calls.append($0)
        }
        await pause(.milliseconds(60))  // Due and taken: its fire now waits in the queue.
        switch operation {
        case "cancel": #expect(timers.cancel("hop"))
        case "pause": #expect(timers.pause("hop"))
        default: #expect(try timers.reschedule("hop", after: .seconds(3_600)))
        }
        gate.signal()
        await pause(Bounds.quiet)
        #expect(calls.count == 0, "the fire taken before \(operation) ran after it returned")
        if operation == "pause" {
            #expect(timers.resume("hop"))
            let values = await calls.wait(forCount: 1)
            #expect(values.first?.count == 1)
        }
    }

    @Test(
        "equal deadlines fire in scheduling order, repeating timers keeping their place at every re-arm",
        arguments: Implementation.allCases)
    func equalDeadlines(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let order = Recorder<TimerID>()
        // Far enough ahead that all 40 are scheduled before the first fires, even in a sanitizer
        // build on a loaded machine (30 ms was not: late-scheduled timers fired in a later round).
        let start = timers.now.advanced(by: .seconds(1))
        let period = Duration.milliseconds(20)
        // Even names repeat from `start`; odd names are one-shots due at `start + period`, the
        // repeating timers' second deadline, and were scheduled between them. A repeating timer
        // that lost its place when re-armed would fire after every one-shot in round two.
        let names = (0..<40).map { TimerID("t\($0)") }
        for (index, name) in names.enumerated() {
            if index.isMultiple(of: 2) {
                // `.burst`: a round that takes longer than a period (a sanitizer build) makes
                // each call answer its own grid point, where `.skip` would merge rounds.
                try timers.scheduleRepeating(
                    id: name, every: period, startingAt: start, options: .init(missedTicks: .burst)
                ) {
                    order.append($0.id)
                }
            } else {
                try timers.schedule(id: name, at: start.advanced(by: period)) { order.append($0.id) }
            }
        }
        guard timers.now < start else {
            // This task lost its core for over a second while scheduling: the first round may
            // have begun before every timer was in, so there is no order to judge. Rare; the
            // other implementation's run and the next run judge it.
            timers.cancelAll()
            return
        }
        let repeating = names.enumerated().filter { $0.offset.isMultiple(of: 2) }.map(\.element)
        let values = await order.wait(forCount: repeating.count + names.count + repeating.count)
        timers.cancelAll()
        #expect(Array(values.prefix(repeating.count)) == repeating, "first round out of order")
        #expect(
            Array(values.dropFirst(repeating.count).prefix(names.count)) == names,
            "second round: re-armed repeating timers must keep their place among the one-shots")
        #expect(Array(values.dropFirst(repeating.count + names.count).prefix(repeating.count)) == repeating)
    }

    @Test(
        "cancel(tick.handle) and tokens end exactly their own timer, never a newer one under a reused ID",
        arguments: Implementation.allCases)
    func generations(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let first = Recorder<Tick>()
        let oldToken = try timers.scheduleTimer(.every(.milliseconds(5)), id: "reused") { first.append($0) }
            .token(on: timers)
        let oldTick = try #require(await first.wait(forCount: 1).first)
        #expect(timers.cancel("reused"))
        let second = Recorder<Tick>()
        try timers.scheduleRepeating(id: "reused", every: .milliseconds(5)) { second.append($0) }
        #expect(timers.coreGeneration(of: "reused") != oldTick.generation)
        #expect(!timers.cancel(oldTick.handle), "a stale tick cancelled the newer timer")
        #expect(!oldToken.cancel(), "a stale token cancelled the newer timer")
        #expect(timers.isScheduled("reused"))
        let newTick = try #require(await second.wait(forCount: 1).first)
        #expect(timers.cancel(newTick.handle))
        #expect(!timers.isScheduled("reused"))
    }

    @Test("scheduledCount counts scheduled and paused timers", arguments: Implementation.allCases)
    func scheduledCount(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        #expect(timers.scheduledCount == 0)
        for index in 0..<100 {
            try timers.schedule(id: TimerID("c\(index)"), after: .seconds(3_600)) { _ in }
        }
        #expect(timers.pause("c0"))
        #expect(timers.scheduledCount == 100)
        #expect(timers.cancel("c1"))
        #expect(timers.scheduledCount == 99)
        timers.cancelAll()
        #expect(timers.scheduledCount == 0)
        timers.shutdown()
        #expect(try !timers.reschedule("c2", after: .seconds(1)))
        #expect(!timers.pause("c2"))
        #expect(timers.scheduledCount == 0)
    }
}
