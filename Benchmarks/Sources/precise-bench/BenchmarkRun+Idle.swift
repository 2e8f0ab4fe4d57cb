extension BenchmarkRun {
    /// Process CPU while one 1 s repeating timer idles; the children run side by side (idle
    /// processes hardly compete), next to one with no timer at all for the baseline.
    mutating func measureIdle() {
        let plan = self.plan
        self.report.section(
            "Idle 1 s timer, \(plan.idleSeconds) s",
            values: ["CPU µs", "µs/s"], ratios: ["×GCD"])
        let kinds: [ServiceKind] = [.none, .precise, .dispatch, .gcd, .nio]
        Self.log("idle: \(plan.idleSeconds) s, \(kinds.count) processes side by side")
        let results = ProbeLauncher.run(kinds.map { Probe.idle($0, seconds: plan.idleSeconds) })
        let reference = (try? results[kinds.firstIndex(of: ServiceKind.reference)!].get())?["cpu"] ?? .nan
        for (kind, outcome) in zip(kinds, results) {
            guard case .success(let result) = outcome else {
                if case .failure(let skip) = outcome { self.report.skipped(kind.label, reason: skip.reason) }
                continue
            }
            let cpu = result["cpu"]
            var note = ""
            if kind == .precise {
                // The issue asks for "~0"; this benchmark reads that as at most 0.1 % of a core.
                note = self.report.check(
                    "~0", cpu / Double(plan.idleSeconds) <= 1_000_000,
                    "idle CPU ~0 (≤ 0.1 % of a core): \(Format.micro(cpu / Double(plan.idleSeconds))) µs per second")
            }
            self.report.row(
                kind.label, values: [Format.micro(cpu), Format.micro(cpu / Double(plan.idleSeconds))],
                ratios: kind != .none && kind != ServiceKind.reference ? [Format.ratio(cpu / reference)] : [],
                note: note)
            self.figures["idle.\(kind.rawValue).cpuPerSecond"] = cpu / Double(plan.idleSeconds)
        }
        // A million timers a day away: pending timers cost no wake-up.
        Self.log("idle: \(Format.count(plan.pending)) far timers pending, \(plan.idleSeconds) s")
        if case .success(let result) = ProbeLauncher.run(.idleFar(count: plan.pending, seconds: plan.idleSeconds)) {
            let perSecond = result["cpu"] / Double(plan.idleSeconds)
            let note = self.report.check(
                "≤ 0.1 %", perSecond <= 1_000_000,
                "idle CPU with \(Format.count(plan.pending)) far timers pending ≤ 0.1 % of a core: "
                    + "\(Format.micro(perSecond)) µs per second")
            self.report.row(
                "PreciseTimer, \(Format.count(plan.pending)) timers a day away",
                values: [Format.micro(result["cpu"]), Format.micro(perSecond)], ratios: [], note: note)
            self.figures["idle.preciseFar.cpuPerSecond"] = perSecond
        }
    }
}
