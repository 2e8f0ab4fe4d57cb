import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerTesting
import Synchronization
import Testing

extension ConformanceTests {
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
        try timers.schedule(after: .seconds(3_600)) { [pending] _ in _ = pending }
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
