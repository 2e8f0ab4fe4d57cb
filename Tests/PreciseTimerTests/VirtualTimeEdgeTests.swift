import Dispatch
import PreciseTimer
import PreciseTimerTesting
import Testing

/// Issue 14, defects 3 and 4: the virtual-time service at the ends of its clock, and
/// `nextDeadline` / `advanceToNextDeadline` as tokio's `time::pause` and Go's `TestZeroTimer`
/// use them. Issue 21, defect 6: the clock seams from a handler, and the wall clock at its ends.
@Suite("Virtual time: edges", .timeLimit(.minutes(1)))
struct VirtualTimeEdgeTests {
    private let end = MonotonicInstant(nanoseconds: .max)

    @Test("defect 3: a service starting at the end of its clock advances by zero and returns")
    func advanceAtTheEnd() throws {
        let timers = TestTimerService(start: self.end)
        defer { timers.shutdown() }
        try timers.advance(by: .zero)
        #expect(timers.now == self.end)
    }

    @Test("defect 3: advancing past the clock's range, or scheduling past it, is .invalidDelay, not a trap")
    func pastTheRange() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        try timers.advance(by: TestTimerService.maximumDuration)
        let error = #expect(throws: PreciseTimerError.self) { try timers.advance(by: TestTimerService.maximumDuration) }
        #expect(error?.code == .invalidDelay)
        let nearEnd = TestTimerService(start: MonotonicInstant(nanoseconds: .max - 1_000))
        defer { nearEnd.shutdown() }
        for schedule in [
            { try nearEnd.schedule(after: .seconds(1)) { _ in } },
            { try nearEnd.scheduleRepeating(every: .seconds(1)) { _ in } },
        ] as [() throws -> TimerID] {
            let error = #expect(throws: PreciseTimerError.self) { try schedule() }
            #expect(error?.code == .invalidDelay)
        }
        #expect(nearEnd.scheduledCount == 0)
    }

    @Test("defect 3: resume and a .delay re-arm near the end of the clock never trap")
    func reArmNearTheEnd() throws {
        let start = MonotonicInstant(nanoseconds: .max - 10_000_000_000)
        let timers = TestTimerService(start: start)
        defer { timers.shutdown() }
        try timers.schedule(id: "paused", after: .seconds(5)) { _ in }
        #expect(timers.pause("paused"))
        try timers.advance(by: .seconds(8))
        #expect(timers.resume("paused"), "its 5 s would end past the clock: it stays, never due")
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(
            id: "delay", every: .seconds(1), startingAfter: .milliseconds(500), options: .init(missedTicks: .delay)
        ) { tick in
            calls.append(tick)
            timers.moveClock(to: timers.now.advanced(by: .seconds(1)))  // a handler that runs long
        }
        try timers.advance(by: .seconds(1))
        #expect(calls.values.count >= 1)
        #expect(timers.now <= self.end)
    }

    @Test("defect 4: nextDeadline fires nothing, even read from a handler or with a timer due now")
    func nextDeadlineIsPure() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let fired = Recorder<TimerID>()
        try timers.schedule(id: "now", after: .zero) { fired.append($0.id) }
        try timers.schedule(id: "later", after: .seconds(1)) { _ in
            fired.append("later")
            _ = timers.nextDeadline  // inside a handler: must not run another one
        }
        try timers.schedule(id: "latest", after: .seconds(1)) { fired.append($0.id) }
        #expect(timers.nextDeadline == timers.now)
        #expect(fired.values.isEmpty)
        try timers.advance(by: .seconds(1))
        #expect(fired.values == ["now", "later", "latest"])
    }

    @Test("defect 4: advanceToNextDeadline fires a zero-delay timer and returns true (Go's TestZeroTimer)")
    func zeroTimer() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let start = timers.now
        let fired = Recorder<TimerID>()
        try timers.schedule(id: "zero", after: .zero) { fired.append($0.id) }
        try timers.schedule(id: "next", after: .seconds(1)) { fired.append($0.id) }
        #expect(timers.advanceToNextDeadline())
        #expect(fired.values == ["zero"], "the later timer is not fired by the same call")
        #expect(timers.now == start)
        #expect(timers.advanceToNextDeadline())
        #expect(fired.values == ["zero", "next"])
        #expect(timers.now == start.advanced(by: .seconds(1)))
        #expect(!timers.advanceToNextDeadline())
    }

    @Test("defect 4: a paused clock steps an interval tick by tick (tokio's time_pause::interval)")
    func intervalStepping() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let start = timers.now
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "interval", every: .milliseconds(300), startingAfter: .zero) {
            ticks.append($0)
        }
        for step in 0..<4 {
            #expect(timers.advanceToNextDeadline())
            #expect(ticks.values.count == step + 1)
            #expect(timers.now == start.advanced(by: .milliseconds(300 * step)))
        }
        #expect(ticks.values.map(\.missed) == [0, 0, 0, 0])
    }

    @Test("suspend(for:) cannot fail: a negative duration sleeps for no time, a huge one saturates")
    func suspendBounds() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let wall = timers.wallClockNow
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(every: .seconds(60), options: .init(clock: .continuous)) { calls.append($0) }
        timers.suspend(for: .seconds(-3600))
        #expect(timers.wallClockNow == wall, "time never runs backwards")
        #expect(calls.values.isEmpty)
        timers.suspend(for: .seconds(Int64.max))
        #expect(timers.wallClockNow.duration(to: wall) < .zero)
        #expect(calls.values.count == 1, "one call for the latest missed period (.skip), however long the sleep")
    }

    @Test(
        "issue 21 defect 6: setWallClock(to:) from a handler steps the clock; what the step made due fires in the same advance",
        arguments: [false, true])
    func setWallClockFromAHandler(onQueue: Bool) throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let start = timers.wallClockNow
        let queue = DispatchQueue(label: "VirtualTimeEdgeTests.step")
        let options = TimerOptions(executor: onQueue ? .queue(queue) : .loop)
        let fired = Recorder<String>()
        try timers.schedule(id: "wall", atWallClock: start.advanced(by: .seconds(3600))) { _ in fired.append("wall") }
        try timers.schedule(id: "step", after: .seconds(1), options: options) { _ in
            timers.setWallClock(to: start.advanced(by: .seconds(7200)))
            fired.append("stepped")
        }
        try timers.advance(by: .seconds(1))
        #expect(fired.values == ["stepped", "wall"])
        #expect(timers.wallClockNow == start.advanced(by: .seconds(7200)))
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "issue 21 defect 6: suspend(for:) from a handler suspends; what the suspend made due fires in the same advance",
        arguments: [false, true])
    func suspendFromAHandler(onQueue: Bool) throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let start = timers.now
        let wall = timers.wallClockNow
        let queue = DispatchQueue(label: "VirtualTimeEdgeTests.suspend")
        let options = TimerOptions(executor: onQueue ? .queue(queue) : .loop)
        let fired = Recorder<String>()
        try timers.schedule(id: "continuous", after: .seconds(3600), options: .init(clock: .continuous)) { _ in
            fired.append("continuous")
        }
        try timers.schedule(id: "suspending", after: .seconds(3600)) { _ in fired.append("suspending") }
        try timers.schedule(id: "sleep", after: .seconds(1), options: options) { _ in
            timers.suspend(for: .seconds(7200))
            fired.append("slept")
        }
        try timers.advance(by: .seconds(1))
        #expect(fired.values == ["slept", "continuous"])
        #expect(timers.now == start.advanced(by: .seconds(1)), "the monotonic clock stands still while suspended")
        #expect(timers.wallClockNow == wall.advanced(by: .seconds(7201)))
        #expect(timers.isScheduled("suspending"))
    }

    @Test("issue 21 defect 6: a wall clock at either end of its range reads back what was set, then saturates there")
    func wallClockAtTheEnds() throws {
        let values: [Int64] = [.min, .min + 1, .min + 1_000_000_000, -1, 0, .max - 1_000_000_000, .max - 1, .max]
        for value in values {
            let instant = WallClockInstant(nanosecondsSinceEpoch: value)
            let started = TestTimerService(wallClock: instant)
            defer { started.shutdown() }
            #expect(started.wallClockNow == instant, "started at \(value)")
            let stepped = TestTimerService()
            defer { stepped.shutdown() }
            stepped.setWallClock(to: instant)
            #expect(stepped.wallClockNow == instant, "stepped to \(value)")
            // Time goes on from there: forward, and stopping at the end instead of wrapping.
            try stepped.advance(by: .seconds(2))
            let expected = value > .max - 2_000_000_000 ? Int64.max : value + 2_000_000_000
            #expect(stepped.wallClockNow.nanosecondsSinceEpoch == expected, "2 s after \(value)")
            stepped.suspend(for: .seconds(1))
            let suspended = expected > .max - 1_000_000_000 ? Int64.max : expected + 1_000_000_000
            #expect(stepped.wallClockNow.nanosecondsSinceEpoch == suspended, "suspended 1 s after \(value) + 2 s")
            // A step away from an end is exact again.
            stepped.setWallClock(to: TestTimerService.defaultWallClock)
            #expect(stepped.wallClockNow == TestTimerService.defaultWallClock)
        }
    }
}
