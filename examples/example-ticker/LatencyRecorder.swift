import PreciseTimer
import Synchronization

/// Collects one ticker's ticks without locks on the hot path: the service never runs a timer's
/// handler concurrently with itself, so there is one writer; readers see `count` atomically.
final class LatencyRecorder: @unchecked Sendable {
    // Invariant: `samples` slots below `count` are written once, by the single handler thread,
    // before `count` is released past them; `last`/`first`/`missed` are written only by it and
    // read by others only after the timer was cancelled (or as a best-effort progress display).
    let name: String
    let interval: Duration
    private let samples: UnsafeMutableBufferPointer<Int64>
    private let recorded = Atomic<Int>(0)
    private(set) var missed: UInt64 = 0
    private(set) var first: Tick?
    private(set) var last: Tick?

    init(name: String, interval: Duration, capacity: Int) {
        self.name = name
        self.interval = interval
        self.samples = .allocate(capacity: max(capacity, 1))
    }

    deinit {
        self.samples.deallocate()
    }

    /// Records a tick; returns the number recorded so far.
    @discardableResult
    func record(_ tick: Tick) -> Int {
        let index = self.recorded.load(ordering: .relaxed)
        guard index < self.samples.count else { return index }
        let (seconds, attoseconds) = tick.lateness.components
        self.samples[index] = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        self.missed += tick.missed
        if self.first == nil { self.first = tick }
        self.last = tick
        self.recorded.store(index + 1, ordering: .releasing)
        return index + 1
    }

    var count: Int { self.recorded.load(ordering: .acquiring) }

    /// The latest tick's lateness in nanoseconds, for the progress line.
    var latestLateness: Int64? {
        let count = self.count
        return count > 0 ? self.samples[count - 1] : nil
    }

    /// The summary of everything recorded.
    func summary() -> TickerSummary {
        let sorted = Array(self.samples[0..<self.count]).sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let rank = Int((p / 100 * Double(sorted.count - 1)).rounded())
            return Double(sorted[rank]) / 1_000
        }
        var drift = 0.0
        if let first = self.first, let last = self.last {
            // Where the last tick should have been on the grid that started with the first one.
            let intervalNanoseconds = Double(self.interval.components.seconds) * 1e9
                + Double(self.interval.components.attoseconds) / 1e9
            let periods = Double(last.count - 1) + Double(self.missed - first.missed)
            let expected = Double(first.scheduledAt.nanoseconds) + periods * intervalNanoseconds
            drift = (Double(last.firedAt.nanoseconds) - expected) / 1_000
        }
        return TickerSummary(
            backend: self.name, ticks: sorted.count, missed: self.missed,
            p50Microseconds: percentile(50), p90Microseconds: percentile(90), p99Microseconds: percentile(99),
            maxMicroseconds: Double(sorted.last ?? 0) / 1_000, driftMicroseconds: drift
        )
    }
}
