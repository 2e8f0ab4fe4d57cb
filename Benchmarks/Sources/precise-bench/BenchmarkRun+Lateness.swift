extension BenchmarkRun {
    /// Lateness of one 1 ms periodic timer per contestant, rounds interleaved (A, B, C, … A, B,
    /// C, …) so that the VM's bursts of noise spread over every contestant.
    mutating func measureLateness() {
        let plan = self.plan
        let perRound = plan.ticks / plan.rounds
        var runs: [Contestant: LatenessRun] = [:]
        var skipped: [Contestant: String] = [:]
        for round in 1...plan.rounds {
            Self.log("lateness: round \(round) of \(plan.rounds)")
            for contestant in Contestant.allCases where skipped[contestant] == nil {
                switch contestant.runRound(plan: plan, ticks: perRound) {
                case .success(let run): runs[contestant, default: LatenessRun()].append(run)
                case .failure(let skip): skipped[contestant] = skip.reason
                }
            }
        }

        let floorP50 = runs[.floorNanosleep].map { Double($0.percentile(50)) } ?? .nan
        // `×GCD` divides by idiomatic Dispatch: a raw DispatchSourceTimer.
        let dispatch = runs[.gcd]
        let dispatchP99 = dispatch.map { Double($0.percentile(99)) } ?? .nan
        self.report.section(
            "Lateness, 1 ms timer, \(plan.ticks) ticks (µs)",
            values: ["p50", "p90", "p99", "p99.9", "max", "drift", "CPU/tick"],
            ratios: ["p50 ×floor", "p99 ×GCD"])
        for contestant in Contestant.allCases {
            let label = contestant.label(plan)
            guard let run = runs[contestant] else {
                self.report.skipped(label, reason: skipped[contestant] ?? "not run")
                continue
            }
            let p50 = Double(run.percentile(50))
            let p99 = Double(run.percentile(99))
            var notes: [String] = []
            switch contestant {
            case .precise:
                notes.append(
                    self.report.check(
                        "p50", p50 <= 1.05 * floorP50,
                        "PreciseTimer p50 ≤ 1.05× kernel floor p50: \(Format.ratio(p50 / floorP50)) "
                            + "(\(Format.micro(p50)) vs \(Format.micro(floorP50)) µs)"))
                let wins = zip(run.roundP99, dispatch?.roundP99 ?? []).filter { $0 <= $1 }.count
                notes.append(
                    self.report.check(
                        "p99", p99 <= dispatchP99,
                        "PreciseTimer p99 ≤ Dispatch (raw DispatchSourceTimer) p99: \(Format.micro(p99)) vs "
                            + "\(Format.micro(dispatchP99)) µs (lower or equal in \(wins) of \(run.roundP99.count) rounds)"
                    ))
            case .preciseSpin:
                notes.append(
                    self.report.check(
                        "p50", p50 <= 5_000,
                        "spin-finish p50 ≤ 5 µs: \(Format.micro(p50)) µs, at \(Format.micro(run.cpuPerCall)) µs CPU per tick"
                    ))
            case .nioRepeatedTask:
                notes.append("fixed delay: lateness vs its own deadline, drift vs the grid")
            case .preciseClock:
                let continuousP50 = runs[.continuousClock].map { Double($0.percentile(50)) } ?? .nan
                notes.append(
                    self.report.check(
                        "clock p50", p50 <= 1.25 * floorP50 && p50 < continuousP50,
                        "TimerClock p50 ≤ 1.25× floor and ahead of ContinuousClock: \(Format.ratio(p50 / floorP50)) "
                            + "(\(Format.micro(p50)) vs ContinuousClock \(Format.micro(continuousP50)) µs)"))
            case .preciseRealtime:
                notes.append("permitted here")
            case .foundation, .gcd:
                notes.append("no deadline reported: grid inferred")
            default:
                break
            }
            if contestant == .precise || contestant == .preciseSpin || contestant == .preciseRealtime {
                let withinPeriod = abs(run.drift) <= plan.interval
                notes.append(
                    self.report.check(
                        "drift", withinPeriod,
                        "\(label) drift ≤ one period after \(run.calls) ticks: \(Format.micro(Double(run.drift))) µs"))
            }
            if run.missed > 0 { notes.append("\(run.missed) missed") }
            if run.early > 0 { notes.append("\(run.early) EARLY") }
            self.report.row(
                label,
                values: [
                    Format.micro(p50), Format.micro(Double(run.percentile(90))), Format.micro(p99),
                    Format.micro(Double(run.percentile(99.9))), Format.micro(Double(run.max)),
                    Format.micro(Double(run.drift)), Format.micro(run.cpuPerCall),
                ],
                ratios: [Format.ratio(p50 / floorP50), Format.ratio(p99 / dispatchP99)],
                note: notes.joined(separator: " · "))
            let key = "lateness.\(contestant)"
            self.figures["\(key).p50"] = p50
            self.figures["\(key).p90"] = Double(run.percentile(90))
            self.figures["\(key).p99"] = p99
            self.figures["\(key).p99.9"] = Double(run.percentile(99.9))
            self.figures["\(key).max"] = Double(run.max)
            self.figures["\(key).drift"] = Double(run.drift)
            self.figures["\(key).cpuPerTick"] = run.cpuPerCall
            self.figures["\(key).missed"] = Double(run.missed)
        }
    }
}
