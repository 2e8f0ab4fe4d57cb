extension BenchmarkRun {
    /// PreciseTimer with `Configuration.metrics` off and on, in this process, rounds interleaved
    /// (off, on, off, on, …) and the best round of each kept, so that load from elsewhere on the
    /// machine does not pass for a cost of metrics.
    mutating func measureMetrics() {
        let plan = self.plan
        let rounds = plan.quick ? 3 : 5
        var pairs: [Bool: Double] = [false: .infinity, true: .infinity]
        var fires: [Bool: Double] = [false: .infinity, true: .infinity]
        Self.log(
            "metrics: off vs on, \(rounds) rounds of \(plan.metricsPairs) schedule+cancel at "
                + "\(plan.metricsPending) pending and \(plan.stormCount) fires")
        do {
            for _ in 0..<rounds {
                for on in [false, true] {
                    let pair = try MetricsBenchmark.scheduleCancel(
                        metrics: on, pending: plan.metricsPending, pairs: plan.metricsPairs)
                    pairs[on] = min(pairs[on]!, pair)
                    fires[on] = min(fires[on]!, try MetricsBenchmark.fire(metrics: on, count: plan.stormCount))
                }
            }
        } catch {
            self.report.skipped("PreciseTimer metrics", reason: "\(error)")
            return
        }
        self.report.section(
            "metrics off vs on (SwiftMetricsRecorder on atomic handlers), best of \(rounds) (ns)",
            values: ["sched+cancel", "per fire"], ratios: ["Δ s+c", "Δ fire"])
        for on in [false, true] {
            let (pair, fire) = (pairs[on]!, fires[on]!)
            self.report.row(
                on ? "PreciseTimer, metrics on" : "PreciseTimer, metrics off (nil)",
                values: [Format.whole(pair), Format.whole(fire)],
                ratios: on ? [Self.delta(pair - pairs[false]!), Self.delta(fire - fires[false]!)] : [],
                note:
                    "\(Format.count(plan.metricsPending)) pending; \(Format.count(plan.stormCount)) one-shots due at once"
            )
            self.figures["metrics.\(on ? "on" : "off").scheduleCancel"] = pair
            self.figures["metrics.\(on ? "on" : "off").fire"] = fire
        }
    }

    /// A signed difference in whole nanoseconds: `+12`, `-3`.
    private static func delta(_ value: Double) -> String {
        (value >= 0 ? "+" : "") + Format.whole(value)
    }
}
