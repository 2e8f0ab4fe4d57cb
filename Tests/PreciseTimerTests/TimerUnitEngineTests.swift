import InMemoryLogging
import Logging
import PreciseTimer
import PreciseTimerCalendar
import PreciseTimerCore
import PreciseTimerReference
import PreciseTimerTesting
import Testing

/// `schedule(unit:)` on the real services: the same unit runs on libevent and Dispatch, never
/// early, never overlapping, under one handle until cancelled. The semantics are tested on
/// virtual time (PreciseTimerCalendarTests); these bounds are generous, for a loaded machine.
@Suite("schedule(unit:) on the real services")
struct TimerUnitEngineTests {
    @Test(
        "a unit runs its async handler, OnUnitInactiveSec= after its end, under one handle until cancelled",
        arguments: Implementation.allCases)
    func runsAndCancels(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let unit = try TimerUnit("OnActiveSec=50ms\nOnUnitInactiveSec=100ms\nAccuracySec=1ms")
        let (stream, continuation) = AsyncStream.makeStream(of: Tick.self)
        let running = SemaphoreGuarded(0)
        let overlapped = SemaphoreGuarded(false)
        let handle = try timers.schedule(unit: unit, id: "unit") { tick in
            let already = running.withLock { count in
                count += 1
                return count > 1
            }
            if already { overlapped.withLock { $0 = true } }
            try? await Task.sleep(for: .milliseconds(30))
            running.withLock { $0 -= 1 }
            continuation.yield(tick)
        }
        #expect(timers.listTimers().map(\.id) == ["unit"])
        var ticks: [Tick] = []
        for await tick in stream {
            ticks.append(tick)
            if ticks.count == 3 { break }
        }
        #expect(ticks.map(\.count) == [1, 2, 3])
        #expect(ticks.allSatisfy { $0.handle == handle })
        #expect(ticks.allSatisfy { $0.firedAt >= $0.scheduledAt }, "never early")
        // No upper bound on lateness: the handler starts on Swift concurrency's pool, which the
        // rest of the suite keeps busy for seconds at a time (15 s seen for three runs).
        for (before, after) in zip(ticks, ticks.dropFirst()) {
            // 30 ms of handler, then 100 ms of OnUnitInactiveSec=.
            #expect(after.firedAt - before.firedAt >= .milliseconds(130))
        }
        #expect(!overlapped.withLock { $0 })

        #expect(timers.cancel(handle))
        #expect(!timers.isScheduled("unit"))
        #expect(timers.listTimers().isEmpty)
        try await Task.sleep(for: .milliseconds(400))
        continuation.finish()
        var after = 0
        for await _ in stream { after += 1 }
        #expect(after <= 1, "at most the run under way when cancelled finishes")
    }

    @Test("WakeSystem=: PreciseTimer arms a CLOCK_BOOTTIME_ALARM timerfd or says why not; Dispatch has no alarm clock")
    func wakeSystem() throws {
        let unit = try TimerUnit("OnCalendar=*-*-* 03:00:00\nWakeSystem=true")
        let libevent = try PreciseTimer()
        defer { libevent.shutdown() }
        do {
            let handle = try libevent.schedule(unit: unit, id: "wake") { _ in }
            #expect(libevent.cancel(handle))
        } catch let error as PreciseTimerError {
            #expect(error.code == .systemFailure)
            #expect(error.function == "timerfd_create")
            #expect(!libevent.isScheduled("wake"))
        }
        let dispatch = DispatchReferenceTimer()
        defer { dispatch.shutdown() }
        #expect {
            try dispatch.schedule(unit: unit, id: "wake") { _ in }
        } throws: { ($0 as? PreciseTimerError)?.code == .invalidConfiguration }
        #expect(!dispatch.isScheduled("wake"))
    }

    @Test("a store that keeps failing: one warning naming the unit, the occurrence not run")
    func storeFailureLogged() async throws {
        struct Unavailable: Error {}
        struct FailingStore: TimerStateStore {
            func lastTrigger(of id: TimerID) async throws -> WallClockInstant? { nil }
            func claim(_ occurrence: WallClockInstant, of id: TimerID) async throws -> Bool { throw Unavailable() }
        }
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in handler })
        logger.logLevel = .warning
        let timers = TestTimerService(instruments: TimerInstruments(logger: logger, metrics: nil, stallThreshold: nil))
        defer { timers.shutdown() }
        let ran = SemaphoreGuarded(false)
        let unit = try TimerUnit("OnActiveSec=0\nAccuracySec=2s")
        try timers.schedule(unit: unit, id: "flaky", store: FailingStore()) { _ in ran.withLock { $0 = true } }
        // Retries sleep on virtual time: move it while the unit waits, until it gives up (bounded
        // by wall time as every wait here, not by a count a starved task could use up).
        let giveUp = ContinuousClock.now + Polling.minimumWait
        while handler.entries.isEmpty, ContinuousClock.now < giveUp {
            try timers.advance(by: .milliseconds(100))
            try await Task.sleep(for: .milliseconds(1))
        }
        let warnings = handler.entries.filter { $0.level == .warning }
        #expect(warnings.count == 1, "\(handler.entries)")
        #expect(warnings.first?.message.description.contains("skipped an occurrence") == true)
        #expect(warnings.first?.metadata["timer.id"]?.description == "flaky")
        #expect(!ran.withLock { $0 })
    }
}
