import Histogram
import PreciseTimer

/// Timer control at scale (run in a child process): `reschedule` against `cancel` + `schedule`
/// at `pending` timers, `scheduledCount` against `scheduledIDs.count` at `countAt` timers, and
/// the longest any single `schedule`, `cancel` or `reschedule` took at `pending` timers.
enum ControlBenchmark {
    /// Runs every measurement on one service, filling it to `countAt` then to `pending` timers
    /// an hour away, each under an explicit ID (the idle-timeout shape: one timer per session).
    ///
    /// - Returns: Figures in nanoseconds: `reschedule.wall`/`.cpu` and `cancelSchedule.wall`/`.cpu`
    ///   per operation; `count.scheduledCount` and `count.scheduledIDs` per call; `worst.schedule`,
    ///   `worst.cancel`, `worst.reschedule` (the longest single call) and `p999.*` (its p99.9).
    static func run(_ timers: any TimerService, pending: Int, countAt: Int, ops: Int) throws -> [String: Double] {
        var figures: [String: Double] = [:]
        var ids: [TimerID] = []
        ids.reserveCapacity(pending)
        func fill(to count: Int) throws {
            while ids.count < count {
                ids.append(try timers.schedule(id: TimerID("s\(ids.count)"), after: .seconds(3_600)) { _ in })
            }
        }

        // scheduledCount vs scheduledIDs.count, at `countAt` pending.
        try fill(to: min(countAt, pending))
        try TimerServiceScale(timers: timers).settle()
        figures["count.scheduledCount"] = Self.perCall(100_000) { timers.scheduledCount }
        figures["count.scheduledIDs"] = Self.perCall(20) { timers.scheduledIDs.count }
        try fill(to: pending)
        try TimerServiceScale(timers: timers).settle()

        // The sessions touched, in a seeded random order drawn before timing; distinct, so that
        // each still holds the timer the fill scheduled.
        let victims = CancelOrder.random.victims(count: ops, pending: pending, seed: 7).map { ids[$0] }
        ids = []
        var failures = 0

        // reschedule: one call per touch, the timer keeps its ID and handler.
        var cpu = Measure.processCPU()
        var start = Measure.now()
        for id in victims where (try? timers.reschedule(id, after: .seconds(7_200))) != true { failures += 1 }
        figures["reschedule.wall"] = Double(Measure.now() - start) / Double(ops)
        try TimerServiceScale(timers: timers).settle()
        figures["reschedule.cpu"] = Double(Measure.processCPU() - cpu) / Double(ops)

        // cancel + schedule under the same ID: the same touch without reschedule.
        cpu = Measure.processCPU()
        start = Measure.now()
        for id in victims {
            if !timers.cancel(id) { failures += 1 }
            if (try? timers.schedule(id: id, after: .seconds(7_200), { _ in })) == nil { failures += 1 }
        }
        figures["cancelSchedule.wall"] = Double(Measure.now() - start) / Double(ops)
        try TimerServiceScale(timers: timers).settle()
        figures["cancelSchedule.cpu"] = Double(Measure.processCPU() - cpu) / Double(ops)

        // Each call timed on its own: the longest is the worst lock hold a caller saw (plus any
        // preemption of this thread, which a loaded VM adds).
        var histograms = (0..<3).map { _ in
            Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        }
        for (index, id) in victims.enumerated() {
            var before = Measure.now()
            if !timers.cancel(id) { failures += 1 }
            var after = Measure.now()
            _ = histograms[1].record(UInt64(after - before))
            before = after
            if (try? timers.schedule(id: id, after: .seconds(3_600 + index % 60), { _ in })) == nil { failures += 1 }
            after = Measure.now()
            _ = histograms[0].record(UInt64(after - before))
            before = after
            if (try? timers.reschedule(id, after: .seconds(3_600 + index % 61))) != true { failures += 1 }
            _ = histograms[2].record(UInt64(Measure.now() - before))
        }
        for (name, histogram) in zip(["schedule", "cancel", "reschedule"], histograms) {
            figures["worst.\(name)"] = Double(histogram.maxRecorded)
            figures["p999.\(name)"] = Double(histogram.valueAtPercentile(99.9))
        }
        guard failures == 0 else { throw BenchmarkSkip(reason: "\(failures) control calls failed") }
        return figures
    }

    /// Nanoseconds per call of `body`, over `calls` calls.
    private static func perCall(_ calls: Int, _ body: () -> Int) -> Double {
        var sink = 0
        let start = Measure.now()
        for _ in 0..<calls { sink &+= body() }
        let elapsed = Measure.now() - start
        if sink == -1 { print(sink) }  // Keeps the calls from being optimised away.
        return Double(elapsed) / Double(calls)
    }
}
