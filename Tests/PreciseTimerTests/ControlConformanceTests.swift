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
        let generation = timers.coreGeneration(of: "idle")
        let before = timers.now
        #expect(try timers.reschedule("idle", after: .milliseconds(40)))
        #expect(timers.coreGeneration(of: "idle") == generation, "a moved timer is the same timer")
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
            let firedBefore = fired.count
            guard try timers.reschedule("session", after: timeout) else {
                // Read after the call: this task may lose its core between `touch` and the call.
                #expect(timers.now >= deadline, "a touch before the deadline must move it")
                break
            }
            #expect(firedBefore == 0, "moved after it fired")
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
        // Read before the move: a thread that lost its core after it could find the new grid's
        // first calls already made.
        let countAtMove = ticks.count
        #expect(try timers.reschedule("beat", at: target))
        #expect(await ticks.wait { $0.dropFirst(countAtMove).filter { $0.scheduledAt >= target }.count >= 2 })
        let values = ticks.values
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
        guard timers.pause("later") else {
            // Only if this task lost its core past the deadline: the timer fired, as it should.
            #expect(timers.now - scheduledAt >= .milliseconds(150), "pause missed a pending timer")
            return
        }
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

}
