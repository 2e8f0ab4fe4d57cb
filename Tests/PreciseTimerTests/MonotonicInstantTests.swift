import PreciseTimer
import PreciseTimerTesting
import Testing

/// `MonotonicInstant` as an `InstantProtocol`, and arithmetic that never traps.
@Suite("MonotonicInstant: InstantProtocol")
struct MonotonicInstantTests {
    @Test("duration(to:) is other − self; advanced(by:) moves forward for a positive duration")
    func signs() {
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        let later = start.advanced(by: .milliseconds(5))
        #expect(later.nanoseconds == 5_005_000_000)
        #expect(start.duration(to: later) == .milliseconds(5))
        #expect(later.duration(to: start) == .milliseconds(-5))
        #expect(later - start == .milliseconds(5))
        #expect(start.advanced(by: .milliseconds(-200)).nanoseconds == 4_800_000_000)
        #expect(start.advanced(by: .seconds(-1) - .nanoseconds(1)).nanoseconds == 3_999_999_999)
    }

    @Test("sub-nanosecond parts round towards the future, so a deadline is never early")
    func rounding() {
        let start = MonotonicInstant(nanoseconds: 100)
        #expect(start.advanced(by: .nanoseconds(1) / 2).nanoseconds == 101)
        #expect(start.advanced(by: .nanoseconds(-1) / 2).nanoseconds == 100)
        #expect(start.advanced(by: .nanoseconds(-3) / 2).nanoseconds == 99)
    }

    @Test("huge durations saturate instead of trapping; differences of any two instants are exact")
    func extremes() {
        let nearEnd = MonotonicInstant(nanoseconds: .max - 5)
        #expect(nearEnd.advanced(by: .seconds(10)).nanoseconds == .max)
        #expect(nearEnd.advanced(by: .seconds(Int64.max)).nanoseconds == .max)
        #expect(MonotonicInstant(nanoseconds: .min + 5).advanced(by: .seconds(-10)).nanoseconds == .min)
        #expect(MonotonicInstant(nanoseconds: 0).advanced(by: .seconds(Int64.min)).nanoseconds == .min)
        let span = MonotonicInstant(nanoseconds: .min).duration(to: MonotonicInstant(nanoseconds: .max))
        #expect(span == .nanoseconds(Int64.max) * 2 + .nanoseconds(1))
        #expect(MonotonicInstant(nanoseconds: .max) - MonotonicInstant(nanoseconds: .min) == span)
    }

    @Test(
        "a sleep at a saturated instant is bad input: invalidDelay, nothing scheduled",
        arguments: Implementation.untimed)
    func farDeadline(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        do {
            try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(Int64.max)))
            Issue.record("a sleep until the end of time returned")
        } catch let error as PreciseTimerError {
            #expect(error.code == .invalidDelay)
        }
        #expect(timers.scheduledCount == 0)
    }
}
