import Foundation
import Dispatch
import PreciseTimer
import Synchronization

/// `--churn N`: schedule, cancel and fire N timers of every kind on one `PreciseTimer`, then shut
/// it down. Run under valgrind by `scripts/check-leaks`: every handler and node must be freed.
struct Churn {
    let cycles: Int

    /// An object for weak-target timers, released right after scheduling.
    private final class Target: Sendable {}

    func run() throws -> String {
        let timers = try PreciseTimer()
        let fired = Atomic<Int>(0)
        let cancelled = Atomic<Int>(0)
        let batch = 1_000
        var started = 0
        while started < self.cycles {
            let size = min(batch, self.cycles - started)
            for index in started..<(started + size) {
                switch index % 4 {
                case 0:  // One-shot that fires.
                    try timers.schedule(after: .microseconds(index % 500)) { _ in fired.add(1, ordering: .relaxed) }
                case 1:  // One-shot cancelled before it fires.
                    let id = try timers.schedule(after: .seconds(3_600)) { _ in fired.add(1, ordering: .relaxed) }
                    if timers.cancel(id) { cancelled.add(1, ordering: .relaxed) }
                case 2:  // Repeating timer that cancels itself after three ticks.
                    try timers.scheduleRepeating(every: .microseconds(200)) { tick in
                        if tick.count == 3, timers.cancel(tick.id) { cancelled.add(1, ordering: .relaxed) }
                    }
                default:  // Weak target released at once: the timer removes itself at its first fire.
                    try timers.scheduleRepeating(every: .microseconds(200), target: Target()) { _, _ in }
                }
            }
            started += size
            // Let the batch drain before the next one, with a bound so a bug cannot hang CI.
            let deadline = DispatchTime.now() + .seconds(30)
            while !timers.scheduledIDs.isEmpty, DispatchTime.now() < deadline {
                usleep(200)
            }
            guard timers.scheduledIDs.isEmpty else {
                throw ChurnError(message: "timers still scheduled after 30 s: \(timers.scheduledIDs.prefix(5))")
            }
        }
        timers.shutdown()
        return "churn: \(self.cycles) cycles, \(fired.load(ordering: .relaxed)) one-shots fired, "
            + "\(cancelled.load(ordering: .relaxed)) cancelled, all timers ended"
    }
}

/// A churn run that could not finish.
struct ChurnError: Error, CustomStringConvertible {
    let message: String
    var description: String { self.message }
}
