import PreciseTimer
import PreciseTimerTesting
import Testing

/// `TimerOptions.tolerance` on virtual time, wake-ups counted exactly: never early, never later
/// than the tolerance, one wake-up for many, a precise timer never delayed, a grid kept.
@Suite("Tolerance")
struct ToleranceTests {
    /// A clock origin on the 8 ms grid (2^23 ns), so the cells below are easy to reason about.
    private let origin = MonotonicInstant(nanoseconds: 1 << 40)

    @Test("100 expiries spread over 8 ms with a 10 ms tolerance share one wake-up; without, 100")
    func coalesces() throws {
        for tolerance in [Duration.zero, .milliseconds(10)] {
            let timers = TestTimerService(start: self.origin)
            defer { timers.shutdown() }
            let late = Recorder<Duration>()
            for index in 1...100 {
                // Deadlines 80 µs apart, all inside the 8.39 ms cell that starts at the origin.
                try timers.schedule(after: .microseconds(80 * index), options: .init(tolerance: tolerance)) { tick in
                    late.append(tick.lateness)
                }
            }
            try timers.advance(by: .milliseconds(20))
            #expect(late.values.count == 100)
            #expect(late.values.allSatisfy { $0 >= .zero && $0 <= tolerance }, "never early, never past the tolerance")
            #expect(timers.loopWakeUps == (tolerance == .zero ? 100 : 1))
        }
    }

    @Test("a tick tells the tolerance it was allowed apart from lateness beyond it")
    func excessLateness() throws {
        let timers = TestTimerService(start: self.origin)
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        // 10 ms asked: an 8.39 ms grid (2^23 ns − 1 of allowance); due 80 µs into its cell.
        try timers.schedule(id: "tolerant", after: .microseconds(80), options: .init(tolerance: .milliseconds(10))) {
            ticks.append($0)
        }
        try timers.schedule(id: "precise", after: .milliseconds(20)) { ticks.append($0) }
        try timers.advance(by: .milliseconds(10))
        // The loop stalls 3 ms past the precise timer's deadline.
        timers.moveClock(to: timers.now.advanced(by: .milliseconds(13)))
        try timers.advance(by: .zero)
        let (tolerant, precise) = (ticks.values[0], ticks.values[1])
        #expect(tolerant.tolerance == .nanoseconds((1 << 23) - 1))
        #expect(tolerant.lateness > .zero && tolerant.lateness <= tolerant.tolerance)
        #expect(tolerant.excessLateness == .zero, "late only by what it asked for")
        #expect(precise.tolerance == .zero)
        #expect(precise.lateness == .milliseconds(3))
        #expect(precise.excessLateness == precise.lateness)
    }

    @Test("a timer with no tolerance fires at its deadline, between tolerant ones")
    func preciseTimerNotDelayed() throws {
        let timers = TestTimerService(start: self.origin)
        defer { timers.shutdown() }
        let fired = Recorder<(TimerID, Duration)>()
        try timers.schedule(id: "tolerant", after: .milliseconds(1), options: .init(tolerance: .milliseconds(10))) {
            fired.append(($0.id, $0.lateness))
        }
        try timers.schedule(id: "precise", after: .milliseconds(2)) { fired.append(($0.id, $0.lateness)) }
        try timers.advance(by: .milliseconds(20))
        #expect(fired.values.map(\.0) == ["precise", "tolerant"])
        #expect(fired.values.first?.1 == .zero)
        #expect(timers.loopWakeUps == 2)
    }

    @Test("a tolerant repeating timer keeps its grid: calls move, the schedule does not")
    func keepsTheGrid() throws {
        let timers = TestTimerService(start: self.origin)
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let start = timers.now
        try timers.scheduleRepeating(every: .milliseconds(10), options: .init(tolerance: .milliseconds(3))) {
            ticks.append($0)
        }
        try timers.advance(by: .milliseconds(100))
        #expect(ticks.values.count >= 9)
        for (k, tick) in ticks.values.enumerated() {
            #expect(tick.scheduledAt == start.advanced(by: .milliseconds(10 * (k + 1))), "on the grid")
            #expect(tick.missed == 0)
            #expect(tick.lateness <= .milliseconds(3))
        }
    }

    @Test("a repeating timer's tolerance is capped at half its interval: no period is skipped")
    func cappedForRepeating() throws {
        let timers = TestTimerService(start: self.origin)
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(every: .milliseconds(1), options: .init(tolerance: .seconds(1))) {
            ticks.append($0)
        }
        try timers.advance(by: .milliseconds(50))
        #expect(ticks.values.count >= 49)
        #expect(ticks.values.allSatisfy { $0.missed == 0 && $0.lateness <= .microseconds(500) })
    }

    @Test("a sleep with a tolerance ends within it, never before its deadline")
    func sleepHonoursTolerance() async throws {
        let timers = TestTimerService(start: self.origin)
        defer { timers.shutdown() }
        let deadline = timers.now.advanced(by: .milliseconds(1))
        let sleeping = Task { try await timers.clock.sleep(until: deadline, tolerance: .milliseconds(10)) }
        while timers.scheduledCount == 0 { await Task.yield() }
        try timers.advance(by: .milliseconds(1))
        #expect(timers.scheduledCount == 1, "tolerant: not at the deadline itself")
        try timers.advance(by: .milliseconds(10))
        try await sleeping.value
        #expect(timers.scheduledCount == 0)
    }

    @Test("a negative tolerance is .invalidDelay", arguments: Implementation.untimed)
    func badTolerance(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let error = #expect(throws: PreciseTimerError.self) {
            try timers.schedule(after: .seconds(1), options: .init(tolerance: .seconds(-1))) { _ in }
        }
        #expect(error?.code == .invalidDelay)
        #expect(timers.scheduledCount == 0)
    }

    @Test("on the real services: tolerant timers all fire, never early", arguments: Implementation.allCases)
    func realServices(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        for index in 1...20 {
            try timers.schedule(after: .microseconds(300 * index), options: .init(tolerance: .milliseconds(5))) {
                ticks.append($0)
            }
        }
        let fired = await ticks.wait(forCount: 20)
        #expect(fired.allSatisfy { $0.firedAt >= $0.scheduledAt })
        #expect(fired.allSatisfy { $0.lateness < .milliseconds(5) + Bounds.lateness })
    }
}
