extension BenchmarkRun {
    /// 100 000 one-shots due at one instant, each service in a fresh child process; then twenty
    /// one-shots due 1–20 ms after the last handler was seen (`after`: the worst one's lateness),
    /// which nothing the service does once the storm is over may make late.
    mutating func measureStorm() {
        let plan = self.plan
        self.report.section(
            "Storm, \(Format.count(plan.stormCount)) one-shots (ms)",
            values: ["first", "last", "after"], ratios: ["last ×GCD"])
        var results: [ServiceKind: ProbeResult] = [:]
        let kinds: [ServiceKind] = [.precise, .dispatch, .gcd, .nio]
        for kind in kinds {
            Self.log("storm: \(kind.label)")
            switch ProbeLauncher.run(.storm(kind, count: plan.stormCount)) {
            case .success(let result): results[kind] = result
            case .failure(let skip): self.report.skipped(kind.label, reason: skip.reason)
            }
        }
        let reference = results[ServiceKind.reference]?["last"] ?? .nan
        for kind in kinds {
            guard let result = results[kind] else { continue }
            let last = result["last"]
            var notes: [String] = []
            if kind == .precise {
                notes.append(
                    self.report.check(
                        "≤ 30 ms", last <= 30_000_000,
                        "fire storm of \(plan.stormCount) done ≤ 30 ms after its deadline: \(Format.milli(last)) ms"))
            }
            let after = result["tail"]
            if kind == .precise {
                notes.append(
                    self.report.check(
                        "after ≤ 1 ms", after >= 0 && after <= 1_000_000,
                        "timers due 1–20 ms after a storm's last handler ≤ 1 ms late: \(Format.milli(after)) ms"))
            }
            if result["overrun"] > 0 {
                notes.append("scheduling ended \(Format.milli(result["overrun"])) ms after the deadline")
            }
            self.report.row(
                kind.label,
                values: [Format.milli(result["first"]), Format.milli(last), after >= 0 ? Format.milli(after) : "–"],
                ratios: kind == ServiceKind.reference ? [] : [Format.ratio(last / reference)],
                note: notes.joined(separator: " · "))
            self.figures["storm.\(kind.rawValue).first"] = result["first"]
            self.figures["storm.\(kind.rawValue).last"] = last
            if after >= 0 { self.figures["storm.\(kind.rawValue).after"] = after }
        }
    }
}
