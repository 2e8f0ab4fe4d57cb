import Dispatch
import PreciseTimer
import PreciseTimerTesting
import Testing

/// `scheduleOrReschedule` (the idle-timeout primitive) and `deadline(of:)`, on every service.
@Suite("Idle timeouts and deadlines")
struct IdleTimeoutTests {
    @Test("scheduleOrReschedule creates once, then pushes the same timer back", arguments: Implementation.untimed)
    func createsThenMoves(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let before = timers.now
        #expect(try timers.scheduleOrReschedule(id: "session", after: .seconds(30)) { _ in })
        let generation = try #require(timers.coreGeneration(of: "session"))
        let first = try #require(timers.deadline(of: "session"))
        #expect(first >= before.advanced(by: .seconds(30)))
        #expect(try !timers.scheduleOrReschedule(id: "session", after: .seconds(60)) { _ in })
        #expect(timers.coreGeneration(of: "session") == generation, "moved, not replaced")
        let moved = try #require(timers.deadline(of: "session"))
        #expect(moved >= first.advanced(by: .seconds(30)))
        #expect(timers.scheduledCount == 1)
    }

    @Test("scheduleOrReschedule refuses bad input and changes nothing", arguments: Implementation.untimed)
    func badInput(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        #expect(throws: PreciseTimerError(.emptyID, id: "")) {
            try timers.scheduleOrReschedule(id: "", after: .seconds(1)) { _ in }
        }
        #expect(throws: PreciseTimerError(.invalidDelay, id: "x", value: "-1.0 seconds")) {
            try timers.scheduleOrReschedule(id: "x", after: .seconds(-1)) { _ in }
        }
        #expect(throws: PreciseTimerError(.reservedID, id: "timer-7")) {
            try timers.scheduleOrReschedule(id: "timer-7", after: .seconds(1)) { _ in }
        }
        // A generated timer that exists may be pushed back by its name; only creating is refused.
        let generated = try timers.schedule(after: .seconds(5)) { _ in }
        #expect(try !timers.scheduleOrReschedule(id: generated, after: .seconds(10)) { _ in })
        #expect(timers.scheduledIDs == [generated])
        timers.shutdown()
        let error = #expect(throws: PreciseTimerError.self) {
            try timers.scheduleOrReschedule(id: "late", after: .seconds(1)) { _ in }
        }
        #expect(error?.code == .shutDown)
    }

    @Test("a touch after the expiry's call began creates a new timer; one before it moves the old one")
    func touchRacesExpiry() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let expired = Recorder<UInt64>()
        let touchedDuringCall = Recorder<Bool>()
        #expect(
            try timers.scheduleOrReschedule(id: "s", after: .seconds(10)) { tick in
                expired.append(tick.generation)
                // Inside the expiry's call: the ID is free, so a touch now creates a new session timer.
                touchedDuringCall.append(
                    (try? timers.scheduleOrReschedule(id: "s", after: .seconds(10)) { _ in }) ?? false)
            })
        try timers.advance(by: .seconds(9))
        #expect(try !timers.scheduleOrReschedule(id: "s", after: .seconds(10)) { _ in })
        try timers.advance(by: .seconds(9))
        #expect(expired.values.isEmpty, "the touch at 9 s moved the expiry to 19 s")
        try timers.advance(by: .seconds(1))
        #expect(expired.values.count == 1)
        #expect(touchedDuringCall.values == [true])
        #expect(timers.isScheduled("s"))
        #expect(timers.deadline(of: "s") == timers.now.advanced(by: .seconds(10)))
    }

    @Test("two threads touching a new ID at once: exactly one creates, none throws", arguments: Implementation.untimed)
    func concurrentFirstTouches(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let rounds = 2_000
        let created = Recorder<Bool>()
        let queue = DispatchQueue(label: "touches", attributes: .concurrent)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let group = DispatchGroup()
            for round in 0..<rounds {
                for _ in 0..<2 {
                    queue.async(group: group) {
                        let id = TimerID("session-\(round)")
                        created.append(
                            (try? timers.scheduleOrReschedule(id: id, after: .seconds(600)) { _ in }) ?? false)
                    }
                }
            }
            group.notify(queue: .global()) { done.resume() }
        }
        #expect(created.values.count == 2 * rounds)
        #expect(created.values.filter { $0 }.count == rounds)
        #expect(timers.scheduledCount == rounds)
    }

    @Test("deadline(of:): pending, paused, running, ended")
    func deadlines() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let start = timers.now
        try timers.schedule(id: "once", after: .seconds(5)) { _ in }
        let seen = Recorder<MonotonicInstant?>()
        try timers.scheduleRepeating(id: "tick", every: .seconds(2)) { _ in
            seen.append(timers.deadline(of: "tick"))  // while its handler runs: the next grid point
        }
        #expect(timers.deadline(of: "once") == start.advanced(by: .seconds(5)))
        #expect(timers.deadline(of: "tick") == start.advanced(by: .seconds(2)))
        #expect(timers.deadline(of: "nothing") == nil)
        timers.pause("once")
        #expect(timers.deadline(of: "once") == nil)
        timers.resume("once")
        try timers.advance(by: .seconds(2))
        #expect(seen.values == [start.advanced(by: .seconds(4))])
        #expect(timers.deadline(of: "tick") == start.advanced(by: .seconds(4)))
        try timers.advance(by: .seconds(3))
        #expect(timers.deadline(of: "once") == nil, "a fired one-shot has no deadline")
    }
}
