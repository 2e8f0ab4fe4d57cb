import PreciseTimer
import PreciseTimerTesting
import Testing

/// Issue 14, defect 10: the pending count a recorder keeps never goes negative, because a timer
/// is counted before it becomes visible, and a refused one is taken back.
@Suite("Metrics: the pending count")
struct PendingOrderTests {
    /// Keeps the pending count from the events and asks the service, at `timerScheduled()`,
    /// whether the timer is already visible.
    private final class Probe: TimerMetricsRecorder {
        let service = SemaphoreGuarded<TestTimerService?>(nil)
        let pending = SemaphoreGuarded(0)
        let visibleWhenCounted = SemaphoreGuarded<[Bool]>([])
        let expectedID = SemaphoreGuarded<TimerID?>(nil)

        func timerScheduled() {
            self.pending.withLock { $0 += 1 }
            if let id = self.expectedID.withLock({ $0 }), let service = self.service.withLock({ $0 }) {
                let visible = service.isScheduled(id)
                self.visibleWhenCounted.withLock { $0.append(visible) }
            }
        }
        func timerFired(latenessNanoseconds: Int64, missed: UInt64, ended: Bool) {
            if ended { self.pending.withLock { $0 -= 1 } }
        }
        func timersCancelled(_ count: Int) { self.pending.withLock { $0 -= count } }
        func timersEnded(_ count: Int) { self.pending.withLock { $0 -= count } }
    }

    @Test("a timer is counted before any other thread can see it (defect 10: it was counted after)")
    func countedBeforeVisible() throws {
        let probe = Probe()
        let timers = TestTimerService(
            instruments: TimerInstruments(logger: TimerInstruments.silentLogger, metrics: probe, stallThreshold: nil))
        probe.service.withLock { $0 = timers }
        probe.expectedID.withLock { $0 = "session" }
        try timers.schedule(id: "session", after: .seconds(1)) { _ in }
        #expect(probe.visibleWhenCounted.withLock { $0 } == [false])
        #expect(timers.scheduledCount == 1)
        probe.service.withLock { $0 = nil }
    }

    @Test("a schedule refused as a duplicate is counted and taken back: the pending count stays exact")
    func refusedIsTakenBack() throws {
        let probe = Probe()
        let timers = TestTimerService(
            instruments: TimerInstruments(logger: TimerInstruments.silentLogger, metrics: probe, stallThreshold: nil))
        try timers.schedule(id: "a", after: .seconds(1)) { _ in }
        #expect(throws: PreciseTimerError(.duplicateID, id: "a")) {
            try timers.schedule(id: "a", after: .seconds(1)) { _ in }
        }
        #expect(try !timers.scheduleOrReschedule(id: "a", after: .seconds(2)) { _ in })
        #expect(try timers.scheduleOrReschedule(id: "b", after: .seconds(2)) { _ in })
        #expect(probe.pending.withLock { $0 } == timers.scheduledCount)
        try timers.advance(by: .seconds(2))
        #expect(probe.pending.withLock { $0 } == 0)
    }
}
