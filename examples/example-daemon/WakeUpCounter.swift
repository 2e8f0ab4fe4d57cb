import PreciseTimer
import Synchronization

/// Counts a lane's loop wake-ups through the metrics hook (`PreciseTimer.Configuration.metrics`),
/// so the stats lines show what `--expiry-tolerance` saves. Everything else it is told, it drops.
final class WakeUpCounter: TimerMetricsRecorder {
    private let count = Atomic<Int>(0)

    var wakeUps: Int { self.count.load(ordering: .relaxed) }

    func loopWokeUp() { self.count.add(1, ordering: .relaxed) }
    func timerScheduled() {}
    func timerFired(latenessNanoseconds: Int64, missed: UInt64, ended: Bool) {}
    func timersCancelled(_ count: Int) {}
    func timersEnded(_ count: Int) {}
}
