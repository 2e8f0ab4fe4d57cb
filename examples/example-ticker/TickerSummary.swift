/// One backend's results, as the table shows them and `--json` prints them (nanoseconds there).
struct TickerSummary: Codable, Sendable {
    /// Lateness percentiles in nanoseconds: nearest rank over the sorted samples.
    struct Lateness: Codable, Sendable {
        var p50: Int64
        var p90: Int64
        var p99: Int64
        /// The largest lateness of any tick, including ticks beyond the sample storage.
        var max: Int64

        /// Reads the percentiles off sorted samples.
        /// - Parameters:
        ///   - sorted: Lateness samples in ascending order; not empty.
        ///   - max: The largest lateness seen.
        init(sorted: [Int64], max: Int64) {
            func rank(_ percent: Int) -> Int64 {
                // Nearest rank: the smallest sample with at least `percent`% of samples at or below it.
                let rank = (sorted.count * percent + 99) / 100
                return sorted[Swift.max(rank, 1) - 1]
            }
            self.p50 = rank(50)
            self.p90 = rank(90)
            self.p99 = rank(99)
            self.max = Swift.max(max, sorted[sorted.count - 1])
        }
    }

    /// `PreciseTimer` or `Dispatch`.
    var backend: String
    /// Handler calls.
    var ticks: Int
    /// Periods skipped (the sum of `Tick.missed`).
    var missed: UInt64
    /// How many ticks the percentiles are taken over (all of them unless the storage filled up).
    var samples: Int
    /// Lateness (fire time minus deadline); `nil` when no tick fired.
    var lateness: Lateness?
    /// The last tick's fire time minus its place on the grid, `origin + k·interval`, where the
    /// origin is when the timer was scheduled and k counts calls plus skipped periods. It
    /// includes that tick's own lateness; a timer that loses phase (`--policy delay`) shows it
    /// growing with the run. `nil` when no tick fired.
    var driftNanoseconds: Int64?
}
