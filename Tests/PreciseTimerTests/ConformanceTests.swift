import Dispatch
import Glibc
import PreciseTimer
import Synchronization
import Testing

/// The same scenarios against `PreciseTimer` and `DispatchReferenceTimer`: what must hold for
/// both. Timing asserts are one-sided (never early) with generous upper bounds.
@Suite("Conformance")
struct ConformanceTests {
    @Test("a one-shot fires once, never early, and is removed", arguments: Implementation.allCases)
    func oneShot(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let before = MonotonicInstant.now()
        let id = try timers.schedule(after: .milliseconds(20)) { ticks.append($0) }
        #expect(timers.isScheduled(id))
        let tick = try #require(await ticks.wait(forCount: 1).first)
        #expect(tick.id == id && tick.count == 1 && tick.missed == 0)
        #expect(tick.scheduledAt - before >= .milliseconds(20))
        #expect(tick.firedAt >= tick.scheduledAt)
        #expect(tick.lateness < Bounds.lateness)
        await pause(Bounds.quiet)
        #expect(ticks.count == 1)
        #expect(!timers.isScheduled(id))
        #expect(!timers.cancel(id))
    }

    @Test(
        "a zero delay fires as soon as possible: deadline now, ahead of any later timer",
        arguments: Implementation.allCases)
    func zeroDelay(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let order = Recorder<Tick>()
        // Scheduled first, due later: a service that delayed `.zero` by even 20 ms would fire
        // it second, however loaded the machine.
        try timers.schedule(id: "later", after: .milliseconds(20)) { order.append($0) }
        let before = timers.now
        try timers.schedule(id: "zero", after: .zero) { order.append($0) }
        let after = timers.now
        let ticks = await order.wait(forCount: 2)
        #expect(ticks.map(\.id) == ["zero", "later"])
        let zero = try #require(ticks.first)
        #expect(zero.scheduledAt >= before && zero.scheduledAt <= after, "the deadline is the instant of the call")
        #expect(zero.firedAt >= zero.scheduledAt)
    }

    @Test("repeating: counts 1, 2, 3… on the grid, never early", arguments: Implementation.allCases)
    func repeating(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let id = try timers.scheduleRepeating(every: .milliseconds(5)) { ticks.append($0) }
        let values = Array(await ticks.wait(forCount: 20).prefix(20))
        timers.cancel(id)
        #expect(values.map(\.count) == Array(1...20))
        let first = try #require(values.first).scheduledAt
        for tick in values {
            #expect(tick.firedAt >= tick.scheduledAt)
            #expect(tick.lateness < Bounds.lateness)
            // On the grid start + k·interval, whatever was skipped.
            #expect((tick.scheduledAt.nanoseconds - first.nanoseconds) % 5_000_000 == 0)
        }
        let periods = zip(values, values.dropFirst()).map { ($1.scheduledAt - $0.scheduledAt) / .milliseconds(5) }
        #expect(zip(periods, values.dropFirst()).allSatisfy { $0 == Double($1.missed + 1) })
    }

    @Test("timers fire by deadline, and in scheduling order at equal delays", arguments: Implementation.allCases)
    func ordering(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let order = Recorder<TimerID>()
        for (name, delay) in [("30", 30), ("10", 10), ("20", 20)] {
            try timers.schedule(id: TimerID(name), after: .milliseconds(delay)) { order.append($0.id) }
        }
        #expect(await order.wait(forCount: 3) == ["10", "20", "30"])

        let same = Recorder<Int>()
        for index in 0..<300 {
            try timers.schedule(after: .milliseconds(30)) { _ in same.append(index) }
        }
        #expect(await same.wait(forCount: 300) == Array(0..<300))
    }

    @Test(
        "cancel: true once, then false; the handler never starts after it returns",
        arguments: Implementation.allCases)
    func cancelGuarantee(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let calls = Atomic<Int>(0)
        let ticks = Recorder<UInt64>()
        let id = try timers.scheduleRepeating(every: .milliseconds(1)) { tick in
            calls.add(1, ordering: .sequentiallyConsistent)
            ticks.append(tick.count)
        }
        await ticks.wait(forCount: 3)
        // Hold the loop in another `.loop` handler: the repeating timer (same executor, never in
        // parallel with it) cannot have a call in flight, and falls due meanwhile. So no call at
        // all may follow `cancel`: not even one excused as "already begun".
        let gate = DispatchSemaphore(value: 0)
        let holding = Recorder<Bool>()
        try timers.schedule(after: .zero) { _ in
            holding.append(true)
            gate.wait()
        }
        await holding.wait(forCount: 1)
        let before = calls.load(ordering: .sequentiallyConsistent)
        usleep(5_000)  // Several periods pass: the timer is due when the loop is released.
        #expect(timers.cancel(id))
        gate.signal()
        #expect(!timers.cancel(id))
        #expect(!timers.isScheduled(id))
        await pause(Bounds.quiet)
        #expect(calls.load(ordering: .sequentiallyConsistent) == before, "a call began after cancel returned")
    }

    @Test(
        "shutdown from a handler does not deadlock, and refuses new timers after",
        arguments: Implementation.allCases)
    func shutdownFromHandler(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        let done = Recorder<Bool>()
        try timers.scheduleRepeating(every: .milliseconds(50)) { _ in }
        try timers.schedule(after: .milliseconds(5)) { _ in
            timers.shutdown()
            timers.shutdown()
            done.append(true)
        }
        await done.wait(forCount: 1)
        #expect(timers.scheduledIDs.isEmpty)
        #expect(throws: PreciseTimerError.self) { try timers.schedule(after: .zero) { _ in } }
        do {
            try timers.schedule(id: "late", after: .zero) { _ in }
        } catch let error as PreciseTimerError {
            #expect(error.code == .shutDown)
            #expect(error.id == "late")
        }
        timers.shutdown()
    }

    @Test(
        "generated IDs stay unique across cancels; explicit IDs are reusable once ended",
        arguments: Implementation.allCases)
    func idUniqueness(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        var seen = Set<TimerID>()
        for _ in 0..<200 {
            let id = try timers.schedule(after: .seconds(60)) { _ in }
            #expect(seen.insert(id).inserted, "\(id) was handed out twice")
            timers.cancel(id)
        }
        // A generated name cannot be taken explicitly, live or ended.
        #expect(throws: PreciseTimerError(.reservedID, id: seen.first!)) {
            try timers.schedule(id: seen.first!, after: .seconds(1)) { _ in }
        }
        let live = try timers.schedule(id: "live", after: .seconds(60)) { _ in }
        #expect(throws: PreciseTimerError(.duplicateID, id: live)) {
            try timers.schedule(id: live, after: .seconds(1)) { _ in }
        }
        timers.cancel(live)
        try timers.schedule(id: live, after: .seconds(60)) { _ in }
        #expect(timers.isScheduled(live))
    }

    @Test("bad input throws a typed error and registers nothing", arguments: Implementation.allCases)
    func badInput(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let tooLong = PreciseTimer.maximumDuration + .nanoseconds(1)
        let cases: [(PreciseTimerError.Code, () throws -> Void)] = [
            (.invalidDelay, { try timers.schedule(after: .milliseconds(-1)) { _ in } }),
            (.invalidDelay, { try timers.schedule(after: tooLong) { _ in } }),
            (.invalidDelay, { try timers.scheduleRepeating(every: .seconds(1), startingAfter: .seconds(-1)) { _ in } }),
            (.invalidInterval, { try timers.scheduleRepeating(every: .zero) { _ in } }),
            (.invalidInterval, { try timers.scheduleRepeating(every: .nanoseconds(-5)) { _ in } }),
            (.invalidInterval, { try timers.scheduleRepeating(every: tooLong) { _ in } }),
            (.invalidDelay, { try timers.schedule(after: Duration.checkedSeconds(.nan)) { _ in } }),
            (.invalidDelay, { try timers.schedule(after: Duration.checkedSeconds(-.infinity)) { _ in } }),
            (.emptyID, { try timers.schedule(id: "", after: .seconds(1)) { _ in } }),
        ]
        for (code, call) in cases {
            #expect { try call() } throws: { ($0 as? PreciseTimerError)?.code == code }
        }
        #expect(timers.scheduledIDs.isEmpty)
        #expect(timers.execTask({}, start: .nan, interval: 0, repeats: false, async: false) == nil)
        #expect(timers.scheduledIDs.isEmpty)
    }

    @Test("after a stall, skip reports the missed periods and keeps the phase", arguments: Implementation.allCases)
    func missedTicksAfterStall(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let id = try timers.scheduleRepeating(every: .milliseconds(10)) { ticks.append($0) }
        await ticks.wait(forCount: 2)
        // Block the executor the repeating timer runs on (both run `.loop` handlers serially),
        // and remember exactly when: the first call after the block must account for it.
        let stall = Recorder<(start: MonotonicInstant, end: MonotonicInstant)>()
        try timers.schedule(after: .zero) { _ in
            let start = timers.now
            usleep(80_000)
            stall.append((start, timers.now))
        }
        let (start, end) = try #require(await stall.wait(forCount: 1).first)
        let afterStall = await ticks.wait { $0.contains { $0.firedAt >= end } }
        timers.cancel(id)
        #expect(afterStall)
        let values = ticks.values
        let first = try #require(values.first { $0.firedAt >= end })
        // Grid points strictly inside the stall were passed over while the loop was blocked.
        let covered = UInt64((end - start) / .milliseconds(10)) - 1
        #expect(first.missed >= covered, "\(end - start) of stall at 10 ms periods, reported \(first.missed)")
        let origin = try #require(values.first).scheduledAt
        for tick in values {
            #expect(
                (tick.scheduledAt.nanoseconds - origin.nanoseconds) % 10_000_000 == 0,
                "tick \(tick.count) left the grid")
        }
        #expect(zip(values, values.dropFirst()).allSatisfy { $1.count == $0.count + 1 })
    }

    @Test("burst calls once per missed period; delay restarts the grid", arguments: Implementation.allCases)
    func burstAndDelay(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let burst = Recorder<Tick>()
        let delay = Recorder<Tick>()
        try timers.scheduleRepeating(every: .milliseconds(10), options: .init(missedTicks: .burst)) { burst.append($0) }
        try timers.scheduleRepeating(every: .milliseconds(10), options: .init(missedTicks: .delay)) { delay.append($0) }
        await burst.wait(forCount: 1)
        // The stall notes how many burst calls came before it: on a loaded machine this task may
        // resume late, after calls that had nothing to catch up, and must wait past the stall.
        let stalledAfter = Recorder<Int>()
        try timers.schedule(after: .zero) { _ in
            stalledAfter.append(burst.count)
            usleep(60_000)
        }
        let callsBeforeStall = try #require(await stalledAfter.wait(forCount: 1).first)
        await burst.wait(forCount: callsBeforeStall + 8)
        await delay.wait { ticks in ticks.firstIndex { $0.missed > 0 }.map { $0 + 1 < ticks.count } ?? false }
        let bursts = burst.values
        // Each call answers the next grid point; a skip is allowed only after `maximumBurst`
        // catch-up calls in a row (each a period or more late), which a slow sanitizer build
        // can cause on its own.
        for (previous, tick) in zip(bursts, bursts.dropFirst()) {
            #expect(
                tick.scheduledAt - previous.scheduledAt == .milliseconds(10) * Int(tick.missed + 1),
                "burst left the grid at call \(tick.count)")
        }
        let limit = MissedTickPolicy.maximumBurst
        for (index, tick) in bursts.enumerated() where tick.missed > 0 {
            #expect(
                index >= limit && bursts[(index - limit)..<index].allSatisfy { $0.lateness >= .milliseconds(10) },
                "call \(tick.count) skipped before \(limit) catch-up calls")
        }
        // The 60 ms stall is made up by calls back to back: late ones that skip nothing.
        let catchUps = bursts.filter { $0.missed == 0 && $0.lateness >= .milliseconds(10) }
        #expect(!catchUps.isEmpty, "no catch-up call after the stall")
        let delays = delay.values
        let late = try #require(delays.firstIndex { $0.missed > 0 })
        try #require(late + 1 < delays.count)
        // The grid restarts one interval after the late call; on a loaded machine the next call
        // may itself be a period late, and then answers a later point of that new grid.
        let restart = delays[late + 1]
        #expect(
            restart.scheduledAt - delays[late].firedAt == .milliseconds(10) * Int(restart.missed + 1),
            "delay restarts from the fire")
    }

    @Test("a timer never overlaps itself on a concurrent queue", arguments: Implementation.allCases)
    func noOverlap(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let running = Atomic<Int>(0)
        let maximum = Atomic<Int>(0)
        let ticks = Recorder<Tick>()
        let queue = DispatchQueue(label: "concurrent", attributes: .concurrent)
        let id = try timers.scheduleRepeating(every: .milliseconds(1), options: .init(executor: .queue(queue))) {
            tick in
            let now = running.add(1, ordering: .acquiringAndReleasing).newValue
            maximum.max(now, ordering: .relaxed)
            usleep(4_000)
            running.subtract(1, ordering: .acquiringAndReleasing)
            ticks.append(tick)
        }
        await ticks.wait(forCount: 10)
        timers.cancel(id)
        #expect(maximum.load(ordering: .relaxed) == 1)
        #expect(ticks.values.dropFirst().contains { $0.missed > 0 }, "4 ms handlers at 1 ms must miss periods")
    }

    @Test("the weak-target adapter lets the target go and removes the timer", arguments: Implementation.allCases)
    func weakTarget(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        var target: Canary? = Canary()
        let probe = WeakProbe(target!)
        let calls = Recorder<UInt64>()
        let id = try timers.scheduleRepeating(every: .milliseconds(2), target: target!) { _, tick in
            calls.append(tick.count)
        }
        await calls.wait(forCount: 2)
        target = nil
        #expect(await calls.wait { _ in probe.isReleased })
        #expect(await calls.wait { _ in !timers.isScheduled(id) })
        let after = calls.count
        await pause(Bounds.quiet)
        #expect(calls.count == after)
    }

    @Test(
        "handler captures are released after cancel, after a one-shot fires and after shutdown",
        arguments: Implementation.allCases)
    func handlersReleased(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        var cancelled: Canary? = Canary()
        var fired: Canary? = Canary()
        var pending: Canary? = Canary()
        let probes = [WeakProbe(cancelled!), WeakProbe(fired!), WeakProbe(pending!)]
        let done = Recorder<Bool>()
        let id = try timers.scheduleRepeating(every: .seconds(60)) { [cancelled] _ in _ = cancelled }
        try timers.schedule(after: .milliseconds(1)) { [fired] _ in
            _ = fired
            done.append(true)
        }
        try timers.schedule(after: .seconds(60)) { [pending] _ in _ = pending }
        cancelled = nil
        fired = nil
        pending = nil
        timers.cancel(id)
        #expect(probes[0].isReleased, "cancel must release the handler at once")
        await done.wait(forCount: 1)
        #expect(await done.wait(timeout: .seconds(5)) { _ in probes[1].isReleased }, "fired one-shot released")
        #expect(!probes[2].isReleased)
        timers.shutdown()
        #expect(probes[2].isReleased, "shutdown must release pending handlers")
    }
}
