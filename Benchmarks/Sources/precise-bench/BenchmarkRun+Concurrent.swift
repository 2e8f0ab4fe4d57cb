import Histogram

extension BenchmarkRun {
    /// 100 and 10 000 concurrent 1 ms timers, PreciseTimer against DispatchReferenceTimer and raw GCD, each run in a fresh
    /// child process, rounds interleaved.
    mutating func measureConcurrent() {
        let plan = self.plan
        let kinds: [ServiceKind] = [.precise, .dispatch, .gcd]
        var merged: [String: (histogram: Histogram<UInt64>?, figures: [String: Double])] = [:]
        var skipped: [String: String] = [:]
        for round in 1...plan.concurrentRounds {
            for count in plan.concurrentCounts {
                for kind in kinds {
                    Self.log("concurrent: \(count) timers on \(kind.label), round \(round) of \(plan.concurrentRounds)")
                    let probe = Probe.concurrent(
                        kind, count: count, milliseconds: Int(plan.concurrentSeconds * 1_000), interval: plan.interval)
                    let key = "\(kind.rawValue).\(count)"
                    switch ProbeLauncher.run(probe) {
                    case .success(let result):
                        var entry = merged[key] ?? (nil, [:])
                        if let histogram = result.histogram {
                            if entry.histogram == nil {
                                entry.histogram = histogram
                            } else {
                                entry.histogram!.add(histogram)
                            }
                        }
                        entry.figures.merge(result.figures, uniquingKeysWith: +)
                        merged[key] = entry
                    case .failure(let skip):
                        skipped[key] = skip.reason
                    }
                }
            }
        }

        self.report.section(
            "N concurrent 1 ms timers, \(Format.seconds(plan.concurrentSeconds * Double(plan.concurrentRounds))) (µs)",
            values: ["p50", "p90", "p99", "p99.9", "max", "calls/s", "missed"],
            ratios: ["p50 ×GCD", "p99 ×GCD"])
        for count in plan.concurrentCounts {
            let reference = merged["\(ServiceKind.reference.rawValue).\(count)"]?.histogram
            for kind in kinds {
                let key = "\(kind.rawValue).\(count)"
                let label = "\(kind.label) × \(count)"
                guard let entry = merged[key], let histogram = entry.histogram, skipped[key] == nil else {
                    self.report.skipped(label, reason: skipped[key] ?? "not run")
                    continue
                }
                func value(_ percentile: Double) -> Double { Double(histogram.valueAtPercentile(percentile)) }
                func ratio(_ percentile: Double) -> Double {
                    reference.map { value(percentile) / Double($0.valueAtPercentile(percentile)) } ?? .nan
                }
                let figures = entry.figures
                let calls = figures["calls"] ?? 0
                let missedShare = (figures["missed"] ?? 0) / (calls + (figures["missed"] ?? 0))
                let callsPerSecond = calls / ((figures["wall"] ?? .nan) / 1e9)
                let cpuShare = (figures["cpu"] ?? .nan) / (figures["wall"] ?? .nan)
                var note = "CPU \(Format.percent(cpuShare))"
                if (figures["early"] ?? 0) > 0 { note += " · \(Format.whole(figures["early"]!)) EARLY" }
                self.report.row(
                    label,
                    values: [
                        Format.micro(value(50)), Format.micro(value(90)), Format.micro(value(99)),
                        Format.micro(value(99.9)), Format.micro(Double(histogram.maxRecorded)),
                        Format.whole(callsPerSecond), Format.percent(missedShare),
                    ],
                    ratios: kind == ServiceKind.reference ? [] : [Format.ratio(ratio(50)), Format.ratio(ratio(99))],
                    note: note)
                self.figures["concurrent.\(key).p50"] = value(50)
                self.figures["concurrent.\(key).p99"] = value(99)
                self.figures["concurrent.\(key).callsPerSecond"] = callsPerSecond
                self.figures["concurrent.\(key).missedShare"] = missedShare
                self.figures["concurrent.\(key).cpuShare"] = cpuShare
            }
        }
    }
}
