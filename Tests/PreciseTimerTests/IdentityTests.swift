import PreciseTimer
import PreciseTimerCompat
import PreciseTimerTesting
import Testing

/// Issue 14, defects 6, 7 and 10 (`execTask`): a timer's identity is the handle `scheduleTimer`
/// returns, never something looked up after the fact, and generated names cannot be taken.
@Suite("Identity")
struct IdentityTests {
    @Test("defect 6: a sleep whose one-shot fired while scheduling never cancels the timer that took its ID")
    func sleepKeepsItsOwnIdentity() async throws {
        let service = IDReusingService()
        let clock = TimerClock(service: service)
        try await clock.sleep(until: service.now.advanced(by: .seconds(1)), tolerance: nil)
        // The sleep's timer fired inside `scheduleTimer`, and an intruder took its ID before the
        // call returned: the sleep, finding itself ended, cancels its own timer only.
        #expect(service.inner.isScheduled(IDReusingService.sharedID))
    }

    @Test("defect 6: leaving a tick loop whose timer ended and was replaced leaves the replacement alone")
    func tickLoopKeepsItsOwnIdentity() async throws {
        let service = IDReusingService()
        do {
            // The loop is left at once: its timer is cancelled as the iterator goes.
            let iterator = try service.ticks(every: .seconds(1)).makeAsyncIterator()
            withExtendedLifetime(iterator) {}
        }
        #expect(service.inner.isScheduled(IDReusingService.sharedID))
    }

    @Test("defect 6: a token made from a handle cancels exactly that timer")
    func tokenFromHandle() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let first = try timers.scheduleTimer(.after(.seconds(1)), id: "job") { _ in }
        let token = first.token(on: timers)
        try timers.advance(by: .seconds(1))  // The one-shot fires; "job" is free again.
        let second = try timers.scheduleTimer(.after(.seconds(1)), id: "job") { _ in }
        #expect(first.id == second.id && first.generation != second.generation)
        #expect(!token.cancel())
        #expect(timers.isScheduled("job"))
        #expect(timers.cancel(second))
    }

    @Test("defect 7: a stale generated name never cancels a later explicit timer (cancelTask)")
    func staleGeneratedName() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let scheduled = timers.execTask({}, start: 0, interval: 0, repeats: false, async: false)
        let name = try #require(scheduled)
        try timers.advance(by: .zero)  // The task ran; its name is stale.
        #expect(throws: PreciseTimerError(.reservedID, id: TimerID(name))) {
            try timers.schedule(id: TimerID(name), after: .seconds(1)) { _ in }
        }
        try timers.schedule(id: "report", after: .seconds(1)) { _ in }
        timers.cancelTask(name)
        #expect(timers.scheduledIDs == ["report"])
    }

    @Test("defect 10: execTask without repeats ignores its interval, NaN included, as documented")
    func execTaskIgnoresUnusedInterval() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Recorder<Int>()
        for (index, interval) in [Double.nan, .infinity, -1, 0].enumerated() {
            let name = timers.execTask(
                { runs.append(index) }, start: 1, interval: interval, repeats: false, async: false)
            #expect(name != nil, "interval \(interval)")
        }
        try timers.advance(by: .seconds(1))
        #expect(runs.values == [0, 1, 2, 3])
        #expect(timers.scheduledCount == 0)
    }
}

/// A forwarding service that forces the interleaving an outside review found: every timer is
/// registered under one explicit ID; a one-shot fires, and a repeating timer is cancelled, before
/// `scheduleTimer` returns, and another timer takes the ID at once. Anything that looked the
/// timer's generation up after `scheduleTimer` returned would find the intruder's.
private final class IDReusingService: TimerService {
    static let sharedID: TimerID = "shared"
    let inner = TestTimerService()

    var now: MonotonicInstant { self.inner.now }
    var wallClockNow: WallClockInstant { self.inner.wallClockNow }

    func scheduleTimer(
        _ trigger: TimerTrigger, id: TimerID?, options: TimerOptions, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerHandle {
        let handle = try self.inner.scheduleTimer(trigger, id: Self.sharedID, options: options, handler)
        if trigger.repeats {
            self.inner.cancel(handle)
        } else {
            try self.inner.advance(by: .seconds(1))
        }
        try self.inner.schedule(id: Self.sharedID, after: .seconds(3600)) { _ in }
        return handle
    }

    func reschedule(_ id: TimerID, after delay: Duration) throws -> Bool { try self.inner.reschedule(id, after: delay) }
    func reschedule(_ id: TimerID, at deadline: MonotonicInstant) throws -> Bool {
        try self.inner.reschedule(id, at: deadline)
    }
    func scheduleOrReschedule(
        id: TimerID, after delay: Duration, options: TimerOptions, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Bool { try self.inner.scheduleOrReschedule(id: id, after: delay, options: options, handler) }
    func deadline(of id: TimerID) -> MonotonicInstant? { self.inner.deadline(of: id) }
    func pause(_ id: TimerID) -> Bool { self.inner.pause(id) }
    func resume(_ id: TimerID) -> Bool { self.inner.resume(id) }
    func isPaused(_ id: TimerID) -> Bool { self.inner.isPaused(id) }
    func cancel(_ id: TimerID) -> Bool { self.inner.cancel(id) }
    func cancel(_ handle: TimerHandle) -> Bool { self.inner.cancel(handle) }
    func generation(of id: TimerID) -> UInt64? { self.inner.coreGeneration(of: id) }
    func cancelAll() { self.inner.cancelAll() }
    func isScheduled(_ id: TimerID) -> Bool { self.inner.isScheduled(id) }
    var scheduledIDs: [TimerID] { self.inner.scheduledIDs }
    var scheduledCount: Int { self.inner.scheduledCount }
    func shutdown() { self.inner.shutdown() }
}
