import PreciseTimer
import PreciseTimerTesting
import Testing

/// Issue 14, defects 3 and 4: the virtual-time service at the ends of its clock, and
/// `nextDeadline` / `advanceToNextDeadline` as tokio's `time::pause` and Go's `TestZeroTimer`
/// use them.
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
}
