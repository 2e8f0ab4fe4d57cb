extension BenchmarkRun {
    /// 100 000 one-shots due at one instant, each service in a fresh child process.
    mutating func measureStorm() {
        let plan = self.plan
        self.report.section(
            "Storm, \(Format.count(plan.stormCount)) one-shots (ms)",
            values: ["first", "last"], ratios: ["last ×GCD"])
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
            if result["overrun"] > 0 {
                notes.append("scheduling ended \(Format.milli(result["overrun"])) ms after the deadline")
            }
            self.report.row(
                kind.label, values: [Format.milli(result["first"]), Format.milli(last)],
                ratios: kind == ServiceKind.reference ? [] : [Format.ratio(last / reference)],
                note: notes.joined(separator: " · "))
            self.figures["storm.\(kind.rawValue).first"] = result["first"]
            self.figures["storm.\(kind.rawValue).last"] = last
        }
    }
}
