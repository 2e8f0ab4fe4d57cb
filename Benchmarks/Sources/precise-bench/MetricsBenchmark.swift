import Dispatch
import PreciseTimer
import PreciseTimerMetrics
import Synchronization

/// What metrics cost PreciseTimer: schedule + cancel and fire, with `Configuration.metrics` off
/// (`nil`, one optional check per event) and on (``SwiftMetricsRecorder`` on ``AtomicMetrics``).
enum MetricsBenchmark {
    /// The recorder of a run with metrics on, or `nil` for off.
    static func recorder(_ on: Bool) -> (any TimerMetricsRecorder)? {
        on ? SwiftMetricsRecorder(factory: AtomicMetrics()) : nil
    }

    /// Nanoseconds per (schedule a one-shot, cancel an older one) from one thread, with
    /// `pending` timers an hour away.
    static func scheduleCancel(metrics on: Bool, pending: Int, pairs: Int) throws -> Double {
        let timers = try PreciseTimer(configuration: .init(metrics: Self.recorder(on)))
        defer { timers.shutdown() }
        var ids: [TimerID] = []
        ids.reserveCapacity(pending)
        for _ in 0..<pending { ids.append(try timers.schedule(after: .seconds(3_600)) { _ in }) }
        // Victims spread over the heap, in a fixed order: every run cancels the same ones.
        let victims = (0..<pairs).map { ids[($0 &* 7_919) % pending] }
        let start = Measure.now()
        for victim in victims {
            _ = try timers.schedule(after: .seconds(3_600)) { _ in }
            timers.cancel(victim)
        }
        return Double(Measure.now() - start) / Double(pairs)
    }

    /// Nanoseconds per fire: `count` one-shots on the loop due at one instant, from the first
    /// call to the last.
    static func fire(metrics on: Bool, count: Int) throws -> Double {
        final class Calls: Sendable {
            let count = Atomic<Int>(0)
            let first = Atomic<Int64>(0)
            let last = Atomic<Int64>(0)
        }
        let timers = try PreciseTimer(configuration: .init(metrics: Self.recorder(on)))
        defer { timers.shutdown() }
        let calls = Calls()
        let done = DispatchSemaphore(value: 0)
        let deadline = timers.now.advanced(by: .milliseconds(500))
        for _ in 0..<count {
            try timers.schedule(at: deadline) { tick in
                let number = calls.count.add(1, ordering: .relaxed).newValue
                if number == 1 { calls.first.store(tick.firedAt.nanoseconds, ordering: .relaxed) }
                if number == count {
                    calls.last.store(MonotonicInstant.now().nanoseconds, ordering: .relaxed)
                    done.signal()
                }
            }
        }
        done.wait()
        let span = calls.last.load(ordering: .relaxed) - calls.first.load(ordering: .relaxed)
        return Double(span) / Double(count - 1)
    }
}
