import Histogram

/// The lateness of one contestant's calls over one or more rounds, and what they summarise to.
struct LatenessRun: Sendable {
    /// Lateness of every call in nanoseconds (negative values, which would be early calls, are
    /// counted in ``early`` and recorded as 0).
    var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
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
    /// Every call's lateness in nanoseconds (0 for an early call), in order, for a run that
    /// recorded calls itself; a run made of rounds keeps each round's in ``roundSamples``.
    private(set) var samples: [Int64] = []
    /// The calls of each round appended (``append(_:)``), for ``roundP99`` and
    /// ``interval(percentile:confidence:resamples:)``.
    private(set) var roundSamples: [[Int64]] = []

    /// Records one call's lateness.
    mutating func record(lateness: Int64) {
        self.calls += 1
        if lateness < 0 { self.early += 1 }
        let clamped = Swift.max(lateness, 0)
        _ = self.histogram.record(UInt64(clamped))
        self.samples.append(clamped)
    }

    /// Adds a later round: its histogram and counts merge; its drift replaces this one's.
    mutating func append(_ round: LatenessRun) {
        self.histogram.add(round.histogram)
        self.roundSamples.append(round.samples)
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

    /// A `confidence` interval of the lateness at `percentile` (0...100), in nanoseconds, by the
    /// bootstrap: the rounds drawn again with replacement `resamples` times (seeded, so a run's
    /// interval is reproducible from its samples), each draw's merged percentile computed, and
    /// the interval's ends taken from those. Whole rounds are drawn, not calls: a stall of the
    /// host makes calls in a row late, so calls are not independent draws; rounds nearly are.
    /// `nil` below two rounds.
    ///
    /// Two columns whose intervals overlap are not told apart by this run: which one's
    /// percentile is lower is then the run's chance.
    func interval(percentile: Double, confidence: Double = 0.9, resamples: Int = 1_000) -> (low: Int64, high: Int64)? {
        guard self.roundSamples.count >= 2 else { return nil }
        var generator = SeededGenerator(seed: 22)
        var estimates: [Int64] = []
        estimates.reserveCapacity(resamples)
        var merged: [Int64] = []
        for _ in 0..<resamples {
            merged.removeAll(keepingCapacity: true)
            for _ in self.roundSamples.indices {
                merged.append(contentsOf: self.roundSamples[Int(generator.next() % UInt64(self.roundSamples.count))])
            }
            merged.sort()
            estimates.append(Self.value(at: percentile, of: merged))
        }
        estimates.sort()
        let tail = (1 - confidence) / 2 * 100
        return (Self.value(at: tail, of: estimates), Self.value(at: 100 - tail, of: estimates))
    }

    /// Each appended round's p99, in order, for round-by-round comparisons.
    var roundP99: [Int64] {
        self.roundSamples.map { Self.value(at: 99, of: $0.sorted()) }
    }

    /// The value at `percentile` (0...100) of `sorted`, as the histogram defines it: the smallest
    /// value with at least `percentile` % of the values at or below it (0 for none, as the
    /// histogram answers).
    private static func value(at percentile: Double, of sorted: [Int64]) -> Int64 {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((percentile / 100 * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
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
