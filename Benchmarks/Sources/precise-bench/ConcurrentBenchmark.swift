import Synchronization

/// Many concurrent periodic timers on one service (run in a child process).
enum ConcurrentBenchmark {
    /// One timer's place on its grid: the periods it has answered so far. A handler never runs
    /// concurrently with itself, so relaxed ordering is enough.
    private final class GridPosition: Sendable {
        let periods = Atomic<Int64>(0)
    }

    /// Schedules `count` repeating timers of period `interval`, their grids `first + k·interval`
    /// spread evenly over one period, lets the start-up pass, then records every call for
    /// `seconds`. Lateness is against the grid this benchmark computed, never the service's own
    /// report of its deadline: the k-th call of a service that reports missed periods answers
    /// period `calls + missed`; for one that does not (GCD), the latest grid point passed.
    /// - Returns: The lateness histogram, and figures `calls`, `missed`, `early`, `wall` and
    ///   `cpu` (process CPU), both in nanoseconds, for the parent to merge rounds.
    static func run(
        _ timers: some ScaleService, count: Int, seconds: Double, interval: Int64
    ) throws -> ProbeResult {
        let recorder = WindowRecorder()
        let start = Measure.now()
        for index in 0..<count {
            let first = start + interval + Int64(index) * interval / Int64(count)
            let position = GridPosition()
            try timers.repeating(every: interval, first: first) { missed in
                let now = Measure.now()
                let done = position.periods.load(ordering: .relaxed)
                let period = missed.map { done + Int64($0) } ?? max((now - first) / interval, 0)
                position.periods.store(period + 1, ordering: .relaxed)
                recorder.record(lateness: now - (first + period * interval), missed: UInt64(max(period - done, 0)))
            }
        }
        Measure.sleep(seconds: 0.1)
        let cpuBefore = Measure.processCPU()
        let wallStart = Measure.now()
        recorder.open()
        Measure.sleep(seconds: seconds)
        let run = recorder.close()
        let wall = Double(Measure.now() - wallStart)
        let cpu = Double(Measure.processCPU() - cpuBefore)
        return ProbeResult(
            figures: [
                "calls": Double(run.calls), "missed": Double(run.missed), "early": Double(run.early),
                "wall": wall, "cpu": cpu,
            ],
            histogram: run.histogram)
    }
}
