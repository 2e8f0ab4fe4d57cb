import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerCalendar
import Synchronization

/// A one-year forward step of the wall clock (a board that boots without a real-time clock and
/// gets NTP time) under a per-second calendar timer, beside a 1 ms heartbeat on the same
/// service: the heartbeat's worst gap before and after the step, and what the calendar timer's
/// call after the step reported. The step goes through the engine's clock seam, as if its
/// `CLOCK_REALTIME` timerfd had reported `ECANCELED`.
struct StepRun {
    let step: Duration

    func run() throws -> String {
        let service = try PreciseTimer()
        defer { service.shutdown() }
        let beats = SemaphoreGuarded<[Int64]>([])
        beats.withLock { $0.reserveCapacity(10_000) }
        let calls = SemaphoreGuarded<[Tick]>([])
        try service.scheduleRepeating(id: "job", on: try CalendarSchedule("*:*:0/1 Europe/Berlin")) { tick in
            calls.withLock { $0.append(tick) }
        }
        try service.scheduleRepeating(id: "heartbeat", every: .milliseconds(1)) { _ in
            let now = MonotonicInstant.now().nanoseconds
            beats.withLock { $0.append(now) }
        }
        usleep(1_500_000)
        let stepAt = MonotonicInstant.now().nanoseconds
        let callsBefore = calls.withLock { $0.count }
        service.simulateClockChange(wallClockStep: self.step)
        usleep(1_500_000)
        let times = beats.withLock { $0 }
        func worstGap(_ range: Range<Int64>) -> Duration {
            let inside = times.filter { range.contains($0) }
            return .nanoseconds(zip(inside, inside.dropFirst()).map { $1 - $0 }.max() ?? 0)
        }
        let before = worstGap((stepAt - 1_000_000_000)..<stepAt)
        let after = worstGap((stepAt - 1_000_000)..<(stepAt + 1_500_000_000))
        let first = calls.withLock { $0.dropFirst(callsBefore).first }
        let report =
            first.map { "missed \($0.missed), occurrence \($0.wallClockDeadline!)" } ?? "no call"
        return
            "step[\(self.step)]: heartbeat worst gap \(before.summary) in the second before, \(after.summary) "
            + "from the step on; the calendar timer's first call after it: \(report)"
    }
}
