import PreciseTimer

/// Many concurrent periodic timers on one service (run in a child process).
enum ConcurrentBenchmark {
    /// Schedules `count` repeating timers of period `interval`, their first deadlines spread
    /// evenly over one period, lets the start-up pass, then records every call for `seconds`.
    /// - Returns: The lateness histogram, and figures `calls`, `missed`, `early`, `wall` and
    ///   `cpu` (process CPU), both in nanoseconds, for the parent to merge rounds.
    static func run(
        _ timers: any TimerService, count: Int, seconds: Double, interval: Int64
    ) throws -> ProbeResult {
        let recorder = WindowRecorder()
        for index in 0..<count {
            let phase = Int64(index) * interval / Int64(count)
            try timers.scheduleRepeating(every: .nanoseconds(interval), startingAfter: .nanoseconds(interval + phase)) {
                tick in
                recorder.record(lateness: Measure.now() - tick.scheduledAt.nanoseconds, missed: tick.missed)
            }
        }
        Measure.sleep(seconds: 0.1)
        let cpuBefore = Measure.processCPU()
        let start = Measure.now()
        recorder.open()
        Measure.sleep(seconds: seconds)
        let run = recorder.close()
        let wall = Double(Measure.now() - start)
        let cpu = Double(Measure.processCPU() - cpuBefore)
        return ProbeResult(
            figures: [
                "calls": Double(run.calls), "missed": Double(run.missed), "early": Double(run.early),
                "wall": wall, "cpu": cpu,
            ],
            histogram: run.histogram)
    }
}
