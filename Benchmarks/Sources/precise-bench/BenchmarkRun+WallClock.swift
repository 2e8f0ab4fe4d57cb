import PreciseTimer

extension BenchmarkRun {
    /// Wall-clock timers: a 1 ms wall-clock schedule against a 1 ms monotonic timer on the same
    /// service, rounds interleaved; process CPU with a daily wall-clock timer pending.
    mutating func measureWallClock() {
        let plan = self.plan
        let perRound = plan.ticks / plan.rounds
        var monotonic = LatenessRun()
        var wall = LatenessRun()
        var skip: String?
        for round in 1...plan.rounds where skip == nil {
            Self.log("wallclock: round \(round) of \(plan.rounds)")
            switch Contestant.precise.runRound(plan: plan, ticks: perRound) {
            case .success(let run): monotonic.append(run)
            case .failure(let reason): skip = reason.reason
            }
            switch WallClockBenchmark.lateness(plan.interval, perRound, { try PreciseTimer() }) {
            case .success(let run): wall.append(run)
            case .failure(let reason): skip = reason.reason
            }
        }
        self.report.section(
            "Wall-clock timers, 1 ms, \(plan.ticks) ticks (µs)",
            values: ["p50", "p90", "p99", "p99.9", "max", "CPU/tick"], ratios: ["p50 ×mono"])
        if let skip {
            self.report.skipped("PreciseTimer wall-clock schedule", reason: skip)
            return
        }
        let monotonicP50 = Double(monotonic.percentile(50))
        for (label, run, key) in [
            ("PreciseTimer, monotonic every 1 ms", monotonic, "monotonic"),
            ("PreciseTimer, wall-clock schedule every 1 ms", wall, "wall"),
        ] {
            let p50 = Double(run.percentile(50))
            var notes: [String] = []
            if key == "wall" {
                notes.append(
                    self.report.check(
                        "p50 ≤ 1.1× mono", p50 <= 1.1 * monotonicP50,
                        "wall-clock timer p50 ≤ 1.1× the monotonic timer's in one run: "
                            + "\(Format.ratio(p50 / monotonicP50)) (\(Format.micro(p50)) vs \(Format.micro(monotonicP50)) µs)"
                    ))
            }
            if run.missed > 0 { notes.append("\(run.missed) missed") }
            if run.early > 0 { notes.append("\(run.early) EARLY") }
            self.report.row(
                label,
                values: [
                    Format.micro(p50), Format.micro(Double(run.percentile(90))),
                    Format.micro(Double(run.percentile(99))), Format.micro(Double(run.percentile(99.9))),
                    Format.micro(Double(run.max)), Format.micro(run.cpuPerCall),
                ],
                ratios: [Format.ratio(p50 / monotonicP50)], note: notes.joined(separator: " · "))
            self.figures["wallclock.\(key).p50"] = p50
            self.figures["wallclock.\(key).p99"] = Double(run.percentile(99))
        }
        self.measureIdleDaily()
        self.measureCalendarCost()
    }

    /// Process CPU with a daily wall-clock timer pending, beside the process baseline.
    private mutating func measureIdleDaily() {
        let plan = self.plan
        Self.log("wallclock: idle with a daily timer, \(plan.idleSeconds) s")
        let results = ProbeLauncher.run([
            .idle(.none, seconds: plan.idleSeconds), .idleDaily(seconds: plan.idleSeconds),
        ])
        self.report.section(
            "Idle, one daily wall-clock timer, \(plan.idleSeconds) s", values: ["CPU µs", "µs/s"], ratios: [])
        for (label, outcome) in zip(["no timer (process baseline)", "PreciseTimer, daily wall-clock timer"], results) {
            guard case .success(let result) = outcome else {
                if case .failure(let skip) = outcome { self.report.skipped(label, reason: skip.reason) }
                continue
            }
            let cpu = result["cpu"]
            let perSecond = cpu / Double(plan.idleSeconds)
            var note = ""
            if label.hasPrefix("PreciseTimer") {
                note = self.report.check(
                    "~0", perSecond <= 1_000_000,
                    "idle CPU with a daily wall-clock timer ≤ 0.1 % of a core: \(Format.micro(perSecond)) µs per second"
                )
                self.figures["wallclock.idleDaily.cpuPerSecond"] = perSecond
            }
            self.report.row(label, values: [Format.micro(cpu), Format.micro(perSecond)], ratios: [], note: note)
        }
    }
}
