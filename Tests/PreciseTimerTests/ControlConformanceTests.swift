import Dispatch
import PreciseTimer
import Testing

/// Timer control on both implementations: absolute deadlines, reschedule, pause and resume,
/// generations, and the cancel guarantee for a fire waiting in its queue.
@Suite("Conformance: control")
struct ControlConformanceTests {
    @Test(
        "schedule(at:) is never early; a past deadline fires at once, reporting how late",
        arguments: Implementation.allCases)
    func absoluteDeadlines(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        // The past one first: whatever the machine's delays, its deadline is the earlier one.
        let past = timers.now.advanced(by: .milliseconds(-200))
        let deadline = timers.now.advanced(by: .milliseconds(30))
        try timers.schedule(id: "past", at: past) { ticks.append($0) }
        try timers.schedule(id: "future", at: deadline) { ticks.append($0) }
        let values = await ticks.wait(forCount: 2)
        #expect(values.map(\.id) == ["past", "future"])
        #expect(values[0].scheduledAt == past)
        #expect(values[0].lateness >= .milliseconds(200))
        #expect(values[1].scheduledAt == deadline)
        #expect(values[1].firedAt >= deadline)
        #expect(values[1].lateness < Bounds.lateness)
        #expect(throws: PreciseTimerError.self) {
            try timers.schedule(at: MonotonicInstant(nanoseconds: .max)) { _ in }
        }
    }

    @Test("scheduleRepeating(startingAt:) keeps the grid start + k·interval", arguments: Implementation.allCases)
    func absoluteGrid(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let start = timers.now.advanced(by: .milliseconds(20))
        try timers.scheduleRepeating(id: "grid", every: .milliseconds(10), startingAt: start) { ticks.append($0) }
        let values = await ticks.wait(forCount: 3)
        timers.cancel("grid")
        for tick in values.prefix(3) {
            let periods = (tick.scheduledAt - start) / .milliseconds(10)
            #expect(start.advanced(by: .milliseconds(10) * Int(periods)) == tick.scheduledAt, "off the grid: \(tick)")
            #expect(tick.firedAt >= tick.scheduledAt)
        }
    }

    @Test(
        "reschedule moves a one-shot, keeps its ID and handler; false for unknown or fired",
        arguments: Implementation.allCases)
    func rescheduleOneShot(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        try timers.schedule(id: "idle", after: .seconds(60)) { ticks.append($0) }
        let generation = timers.generation(of: "idle")
        let before = timers.now
        #expect(try timers.reschedule("idle", after: .milliseconds(40)))
        #expect(timers.generation(of: "idle") == generation, "a moved timer is the same timer")
        let values = await ticks.wait(forCount: 1)
        #expect(values.first?.firedAt ?? before >= before.advanced(by: .milliseconds(40)), "never early")
        #expect(values.first?.count == 1)
        #expect(try !timers.reschedule("idle", after: .seconds(1)), "a fired one-shot cannot be moved")
        #expect(try !timers.reschedule("never", after: .seconds(1)))
        #expect(!timers.isScheduled("idle"))
    }

    @Test(
        "reschedule pushes an idle timeout back again and again; it fires once, after the last touch",
        arguments: Implementation.allCases)
    func idleTimeout(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        // Every touch that comes before the deadline must move it; one that comes after it (a
        // loaded machine can starve this task for longer than the timeout) must find the timer
        // fired, at or after the deadline the previous touch set. Either way, exactly one fire.
        let timeout = Duration.milliseconds(200)
        let fired = Recorder<MonotonicInstant>()
        // Lower bounds only: each deadline is read before the call that sets it.
        var deadline = timers.now.advanced(by: timeout)
        try timers.schedule(id: "session", after: timeout) { fired.append($0.firedAt) }
        for _ in 0..<10 {
            await pause(.milliseconds(10))
            let touch = timers.now
            guard try timers.reschedule("session", after: timeout) else {
                #expect(touch >= deadline, "a touch before the deadline must move it")
                break
            }
            #expect(fired.count == 0, "moved after it fired")
            deadline = touch.advanced(by: timeout)
        }
        let values = await fired.wait(forCount: 1)
        #expect(values.first ?? deadline >= deadline, "fired before the last touch's deadline")
        await pause(Bounds.quiet)
        #expect(fired.count == 1)
        #expect(!timers.isScheduled("session"))
    }

    @Test(
        "reschedule restarts a repeating timer's grid at the new deadline, keeping its count",
        arguments: Implementation.allCases)
    func rescheduleRepeating(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "beat", every: .milliseconds(10)) { ticks.append($0) }
        await ticks.wait(forCount: 2)
        let target = timers.now.advanced(by: .milliseconds(100))
        #expect(try timers.reschedule("beat", at: target))
        let countAtMove = ticks.count
        let values = await ticks.wait(forCount: countAtMove + 3)
        timers.cancel("beat")
        // At most one call that had already begun may land before the new deadline.
        let after = values.dropFirst(countAtMove).filter { $0.scheduledAt >= target }
        #expect(after.count >= 2)
        // On the new grid target + k·10 ms; a call a loaded machine made a period late answers
        // a later point of it and says so in `missed`.
        var expected = target
        for tick in after.prefix(2) {
            expected = expected.advanced(by: .milliseconds(10) * Int(tick.missed))
            #expect(tick.scheduledAt == expected)
            expected = expected.advanced(by: .milliseconds(10))
        }
        #expect(values.map(\.count) == Array(1...UInt64(values.count)), "count kept across the move")
    }

    @Test("reschedule with a bad delay throws .invalidDelay and changes nothing", arguments: Implementation.untimed)
    func rescheduleBadInput(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        try timers.schedule(id: "kept", after: .seconds(60)) { _ in }
        #expect { try timers.reschedule("kept", after: .seconds(-1)) } throws: {
            ($0 as? PreciseTimerError)?.code == .invalidDelay
        }
        #expect { try timers.reschedule("kept", after: PreciseTimer.maximumDuration + .seconds(1)) } throws: {
            ($0 as? PreciseTimerError)?.code == .invalidDelay
        }
        #expect { try timers.reschedule("kept", at: MonotonicInstant(nanoseconds: .max)) } throws: {
            ($0 as? PreciseTimerError)?.code == .invalidDelay
        }
        #expect(timers.isScheduled("kept"))
        #expect(timers.scheduledCount == 1)
    }

    @Test(
        "a paused timer stays scheduled and never fires; resume keeps the time it had left",
        arguments: Implementation.allCases)
    func pauseAndResume(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        // Lower bound of the time left: the deadline read before `schedule`, the pause after.
        let scheduledAt = timers.now
        try timers.schedule(id: "later", after: .milliseconds(150)) { ticks.append($0) }
        #expect(timers.pause("later"))
        let pausedAt = timers.now
        #expect(timers.pause("later"), "idempotent")
        #expect(timers.isPaused("later"))
        #expect(timers.isScheduled("later"))
        #expect(timers.scheduledCount == 1)
        await pause(.milliseconds(250))
        #expect(ticks.count == 0, "a paused timer fired")
        let resumedAt = timers.now
        #expect(timers.resume("later"))
        #expect(!timers.resume("later"), "idempotent: no longer paused, so nothing to resume")
        #expect(!timers.isPaused("later"))
        let values = await ticks.wait(forCount: 1)
        let left = scheduledAt.advanced(by: .milliseconds(150)) - pausedAt
        #expect(
            values.first?.firedAt ?? resumedAt >= resumedAt.advanced(by: left), "resumed with less time than it had")
        #expect(!timers.pause("never"))
        #expect(!timers.resume("never"))
        #expect(!timers.isPaused("never"))
    }

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
        await pause(.milliseconds(20))  // A call begun before the pause may still land.
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
        default: #expect(try timers.reschedule("hop", after: .seconds(60)))
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
        try #require(timers.now < start, "scheduling 40 timers took over a second")
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
        "cancel(tick) and tokens end exactly their own timer, never a newer one under a reused ID",
        arguments: Implementation.allCases)
    func generations(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let first = Recorder<Tick>()
        try timers.scheduleRepeating(id: "reused", every: .milliseconds(5)) { first.append($0) }
        let oldToken = TimerID("reused").token(on: timers)
        let oldTick = try #require(await first.wait(forCount: 1).first)
        #expect(timers.cancel("reused"))
        let second = Recorder<Tick>()
        try timers.scheduleRepeating(id: "reused", every: .milliseconds(5)) { second.append($0) }
        #expect(timers.generation(of: "reused") != oldTick.generation)
        #expect(!timers.cancel(oldTick), "a stale tick cancelled the newer timer")
        #expect(!oldToken.cancel(), "a stale token cancelled the newer timer")
        #expect(timers.isScheduled("reused"))
        let newTick = try #require(await second.wait(forCount: 1).first)
        #expect(timers.cancel(newTick))
        #expect(!timers.isScheduled("reused"))
    }

    @Test("scheduledCount counts scheduled and paused timers", arguments: Implementation.allCases)
    func scheduledCount(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        #expect(timers.scheduledCount == 0)
        for index in 0..<100 {
            try timers.schedule(id: TimerID("c\(index)"), after: .seconds(60)) { _ in }
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
