import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// Moving and pausing by handle (what a timer unit does to its carrier): only the timer the
/// handle names, never a newer one that took its ID after a cancel.
@Suite("Reschedule and pause by handle")
struct HandleControlTests {
    @Test("a stale handle moves and pauses nothing; the current one does both")
    func staleHandle() throws {
        let timers = TestTimerService()
        let old = try timers.scheduleTimer(.after(.seconds(10)), id: "carrier") { _ in }
        #expect(timers.cancel(old))
        let current = try timers.scheduleTimer(.after(.seconds(20)), id: "carrier") { _ in }
        let start = timers.now
        let deadline = try #require(timers.deadline(of: "carrier"))

        #expect(try !timers.core.reschedule(old, at: start.advanced(by: .seconds(5))))
        #expect(!timers.core.pause(old))
        #expect(timers.deadline(of: "carrier") == deadline)
        #expect(!timers.isPaused("carrier"))
        #expect(timers.core.invariantViolations().isEmpty)

        // Earlier (moved in the heap) and later (extended lazily): both by the current handle.
        #expect(try timers.core.reschedule(current, at: start.advanced(by: .seconds(5))))
        #expect(timers.deadline(of: "carrier") == start.advanced(by: .seconds(5)))
        #expect(try timers.core.reschedule(current, at: start.advanced(by: .seconds(30))))
        #expect(timers.deadline(of: "carrier") == start.advanced(by: .seconds(30)))
        #expect(timers.core.pause(current))
        #expect(timers.isPaused("carrier"))
        #expect(timers.core.invariantViolations().isEmpty)
        #expect(timers.cancel(current))
        #expect(try !timers.core.reschedule(current, at: start.advanced(by: .seconds(1))))
        #expect(!timers.core.pause(current))
    }

    @Test("a handle whose timer is gone reports false and changes no other timer")
    func goneTimer() throws {
        let timers = TestTimerService()
        let gone = try timers.scheduleTimer(.after(.milliseconds(1))) { _ in }
        try timers.advance(by: .milliseconds(2))
        let other = try timers.scheduleTimer(.after(.seconds(1))) { _ in }
        #expect(try !timers.core.reschedule(gone, at: timers.now.advanced(by: .seconds(9))))
        #expect(!timers.core.pause(gone))
        #expect(timers.deadline(of: other.id) == timers.now.advanced(by: .seconds(1)))
        #expect(!timers.isPaused(other.id))
    }
}
