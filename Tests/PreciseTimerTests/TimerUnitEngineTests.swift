import PreciseTimer
import PreciseTimerCalendar
import PreciseTimerCore
import Synchronization
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
        let running = Mutex(0)
        let overlapped = Mutex(false)
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
        #expect(ticks.allSatisfy { $0.lateness < Bounds.lateness * 4 })
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
}
