import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerReference
import Synchronization

/// Idle sessions on one clock, touched at a steady rate, beside a 1 ms heartbeat on the same
/// service: what a change to one timer bound to the continuous clock costs when many are
/// pending (each touch is a `scheduleOrReschedule`, the daemon's idiom). Reports the process's
/// CPU over the touching and how many of its calls the heartbeat got.
struct SessionsRun {
    let sessions: Int
    let clock: TimerOptions.ClockKind
    let touchesPerSecond = 1_000
    let seconds = 3

    func run(on service: any TimerService, named name: String) throws -> String {
        defer { service.shutdown() }
        let options = TimerOptions(clock: self.clock)
        let ids = (0..<self.sessions).map { TimerID("session-\($0)") }
        for id in ids {
            try service.schedule(id: id, after: .seconds(600), options: options) { _ in }
        }
        let beats = Atomic<Int>(0)
        try service.scheduleRepeating(id: "heartbeat", every: .milliseconds(1)) { _ in
            beats.add(1, ordering: .relaxed)
        }
        var generator = SystemRandomNumberGenerator()
        let start = MonotonicInstant.now()
        let cpuBefore = processCPU()
        let beatsBefore = beats.load(ordering: .relaxed)
        let touches = self.touchesPerSecond * self.seconds
        for touch in 0..<touches {
            // At its own instant on a 1 ms grid, so the rate holds however long a touch takes.
            let due = start.nanoseconds + Int64(touch) * 1_000_000_000 / Int64(self.touchesPerSecond)
            let wait = due - MonotonicInstant.now().nanoseconds
            if wait > 0 { usleep(UInt32(wait / 1_000)) }
            let id = ids[Int.random(in: 0..<ids.count, using: &generator)]
            try service.scheduleOrReschedule(id: id, after: .seconds(600), options: options) { _ in }
        }
        let end = start.nanoseconds + Int64(self.seconds) * 1_000_000_000
        let rest = end - MonotonicInstant.now().nanoseconds
        if rest > 0 { usleep(UInt32(rest / 1_000)) }
        let cpu = processCPU() - cpuBefore
        let wall = Duration.nanoseconds(MonotonicInstant.now().nanoseconds - start.nanoseconds)
        let calls = beats.load(ordering: .relaxed) - beatsBefore
        return
            "sessions[\(name), \(self.clock)]: \(self.sessions) sessions, \(touches) touches in \(wall.summary): "
            + "process CPU \(cpu.summary), heartbeat \(calls) of \(self.seconds * 1_000) calls"
    }
}
