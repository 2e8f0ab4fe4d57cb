import PreciseTimer
import Testing

/// The libevent engine's wall and continuous timerfds, driven through its seam: the engine's
/// clocks are offset and a clock change is reported as a `TFD_TIMER_CANCEL_ON_SET` read reports
/// one, without touching the machine's clocks.
@Suite("Engine: wall-clock steps and suspend (seam)")
struct EngineClockTests {
    @Test("a step forward past a wall-clock deadline fires it at once")
    func stepForward() async throws {
        let timers = try PreciseTimer()
        defer { timers.shutdown() }
        let instant = timers.wallClockNow.advanced(by: .seconds(3600))
        let ticks = Recorder<Tick>()
        try timers.schedule(id: "rotate", atWallClock: instant) { ticks.append($0) }
        await pause(.milliseconds(50))
        #expect(ticks.values.isEmpty)
        timers.simulateClockChange(wallClockStep: .seconds(3601))
        let fired = await ticks.wait(forCount: 1)
        #expect(fired.first?.wallClockDeadline == instant)
        #expect(timers.wallClockNow >= instant)
    }

    @Test("a step back makes a wall-clock deadline wait; stepping forward again fires it")
    func stepBack() async throws {
        let timers = try PreciseTimer()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let scheduled = MonotonicInstant.now()
        try timers.schedule(id: "soon", atWallClock: timers.wallClockNow.advanced(by: .seconds(1))) { ticks.append($0) }
        timers.simulateClockChange(wallClockStep: .seconds(-3600))
        // Unless this task lost its core for the whole second before the step, when the timer
        // rightly fired first.
        let steppedInTime = MonotonicInstant.now() - scheduled < .seconds(1)
        await pause(.milliseconds(1500))
        #expect(!steppedInTime || ticks.values.isEmpty, "the wall clock is an hour before the deadline")
        timers.simulateClockChange(wallClockStep: .seconds(3600))
        #expect(await ticks.wait(forCount: 1).count == 1)
    }

    @Test("a step back with a wall-clock timer pending leaves the loop asleep (defect 8: it spun)")
    func stepBackSleeps() async throws {
        let name = "clock-step-idle"
        let timers = try PreciseTimer(configuration: .init(threadName: name))
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let scheduled = MonotonicInstant.now()
        try timers.schedule(id: "soon", atWallClock: timers.wallClockNow.advanced(by: .seconds(1))) { ticks.append($0) }
        timers.simulateClockChange(wallClockStep: .seconds(-3600))
        let steppedInTime = MonotonicInstant.now() - scheduled < .seconds(1)  // See `stepBack`.
        // Measured after the step was served, over 2 s: the machine's clock passes the deadline
        // after 1 s, the engine's clock an hour later. Asleep, the loop uses next to nothing; a
        // timerfd left armed at the engine's reading expired at every pass (2.4 s of CPU in 3 s).
        await pause(.milliseconds(100))
        let before = try #require(ThreadCPU.time(ofThreadNamed: name))
        await pause(.seconds(2))
        let used = try #require(ThreadCPU.time(ofThreadNamed: name)) - before
        #expect(used < .milliseconds(200), "the loop thread used \(used) of CPU in 2 s")
        #expect(!steppedInTime || ticks.values.isEmpty, "the engine's wall clock is an hour before the deadline")
        timers.simulateClockChange(wallClockStep: .seconds(3600))
        #expect(await ticks.wait(forCount: 1).count == 1)
    }

    @Test("after a suspend, continuous and wall-clock timers that came due fire; suspending ones wait")
    func suspend() async throws {
        let timers = try PreciseTimer()
        defer { timers.shutdown() }
        let fired = Recorder<TimerID>()
        let ticks = Recorder<Tick>()
        try timers.schedule(id: "continuous", after: .seconds(3600), options: .init(clock: .continuous)) {
            fired.append($0.id)
        }
        try timers.schedule(id: "suspending", after: .seconds(3600)) { fired.append($0.id) }
        // Hourly, its occurrences half an hour off now: one at +30 min and one at +90 min pass
        // asleep, the next (+150 min) is half an hour away at resume, whatever the real clock says.
        let hour: Int64 = 3_600_000_000_000
        let offset = (timers.wallClockNow.nanosecondsSinceEpoch + hour / 2) % hour
        try timers.scheduleRepeating(id: "hourly", on: EveryWallClockInterval(interval: hour, offset: offset)) {
            ticks.append($0)
        }
        timers.simulateClockChange(suspend: .seconds(2 * 3600))
        #expect(await fired.wait(forCount: 1) == ["continuous"])
        let calls = await ticks.wait(forCount: 1)
        #expect(calls.first?.missed == 1, "two occurrences passed asleep: one call, the other missed")
        await pause(.milliseconds(100))
        #expect(fired.values == ["continuous"])
        #expect(ticks.values.count == 1)
        #expect(timers.isScheduled("suspending"))
    }
}
