import PreciseTimer
import PreciseTimerTesting
import Testing

/// Issue 14, defects 1 and 10: small contract breaks found from outside, each pinned here.
@Suite("Contracts")
struct ContractTests {
    @Test("defect 10: resume returns true only for a timer that was paused")
    func resumeOnlyWhatWasPaused() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let seen = Recorder<Bool>()
        try timers.schedule(id: "running", after: .seconds(1)) { _ in }
        #expect(!timers.resume("running"), "never paused")
        #expect(!timers.resume("missing"))
        #expect(timers.pause("running"))
        #expect(timers.resume("running"))
        #expect(!timers.resume("running"))
        // Paused while its handler runs, then resumed before the call returns: that was a pause.
        try timers.scheduleRepeating(id: "ticker", every: .seconds(1)) { _ in
            _ = timers.pause("ticker")
            seen.append(timers.resume("ticker"))
            seen.append(timers.resume("ticker"))
        }
        try timers.advance(by: .seconds(1))
        #expect(seen.values == [true, false])
        #expect(!timers.isPaused("ticker"))
    }

    // Issue 14 asked for `.invalidDelay` here; issue 21 (defect 10) reversed it, as Go, tokio and
    // Swift's own clocks do: a past deadline, however far, returns at once.
    @Test("issue 21 defect 10: a sleep until a deadline more than maximumDuration in the past returns at once")
    func sleepFarInThePast() async throws {
        let timers = TestTimerService(start: MonotonicInstant(nanoseconds: 0))
        defer { timers.shutdown() }
        try await timers.clock.sleep(until: MonotonicInstant(nanoseconds: -(1 << 62) - 1), tolerance: nil)
        try await timers.clock.sleep(until: MonotonicInstant(nanoseconds: -1), tolerance: nil)
        #expect(timers.scheduledCount == 0)
    }

    @Test("defect 1: every instant prints, negative ones and the ends of Int64 included")
    func instantsPrint() throws {
        #expect(MonotonicInstant(nanoseconds: 0).description == "0.000000000s")
        #expect(MonotonicInstant(nanoseconds: 1_500_000_000).description == "1.500000000s")
        #expect(MonotonicInstant(nanoseconds: -1).description == "-0.000000001s")
        #expect(MonotonicInstant(nanoseconds: -1_500_000_000).description == "-1.500000000s")
        #expect(MonotonicInstant(nanoseconds: .max).description == "9223372036.854775807s")
        #expect(MonotonicInstant(nanoseconds: .min).description == "-9223372036.854775808s")
        #expect(WallClockInstant(nanosecondsSinceEpoch: -1).description == "1969-12-31T23:59:59.999999999Z")
        #expect(WallClockInstant(nanosecondsSinceEpoch: 0).description == "1970-01-01T00:00:00.000000000Z")
        _ = WallClockInstant(nanosecondsSinceEpoch: .min).description
        _ = WallClockInstant(nanosecondsSinceEpoch: .max).description
    }

    @Test(
        "defect 1: scheduling at Int64.min nanoseconds throws .invalidDelay with a readable message",
        arguments: Implementation.untimed)
    func scheduleAtMin(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let error = #expect(throws: PreciseTimerError.self) {
            try timers.schedule(at: MonotonicInstant(nanoseconds: .min)) { _ in }
        }
        #expect(error?.code == .invalidDelay)
        #expect(error?.description.contains("-9223372036.854775808s") == true)
    }
}
