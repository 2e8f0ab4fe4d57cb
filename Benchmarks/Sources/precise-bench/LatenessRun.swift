import Histogram

/// The lateness of one contestant's calls over one or more rounds, and what they summarise to.
struct LatenessRun: Sendable {
    /// Lateness of every call in nanoseconds (negative values, which would be early calls, are
    /// counted in ``early`` and recorded as 0).
    var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    /// Each round's p99, in order, for round-by-round comparisons.
    var roundP99: [Int64] = []
    /// Handler calls.
    var calls = 0
    /// Periods the service reported as skipped.
    var missed: UInt64 = 0
    /// Calls that came before their deadline (a correctness bug if ever non-zero).
    var early = 0
    /// The last call's distance from the ideal grid `start + k·interval`, k counting every
    /// period (called or skipped), of the last round.
    var drift: Int64 = 0
    /// Process CPU time over the rounds, in nanoseconds.
    var cpu: Int64 = 0

    /// Records one call's lateness.
    mutating func record(lateness: Int64) {
        self.calls += 1
        if lateness < 0 { self.early += 1 }
        _ = self.histogram.record(UInt64(Swift.max(lateness, 0)))
    }

    /// Adds a later round: its histogram and counts merge; its drift replaces this one's.
    mutating func append(_ round: LatenessRun) {
        self.histogram.add(round.histogram)
        self.roundP99.append(round.percentile(99))
        self.calls += round.calls
        self.missed += round.missed
        self.early += round.early
        self.drift = round.drift
        self.cpu += round.cpu
    }

    /// The lateness at `percentile` (0...100), in nanoseconds.
    func percentile(_ percentile: Double) -> Int64 {
        Int64(self.histogram.valueAtPercentile(percentile))
    }

    /// The largest lateness recorded, in nanoseconds.
    var max: Int64 {
        Int64(self.histogram.maxRecorded)
    }

    /// Process CPU per call, in nanoseconds.
    var cpuPerCall: Double {
        self.calls == 0 ? .nan : Double(self.cpu) / Double(self.calls)
    }
}
