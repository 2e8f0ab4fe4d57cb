extension BenchmarkRun {
    /// RSS growth per pending timer, each service in a fresh child process.
    mutating func measureMemory() {
        let plan = self.plan
        self.report.section(
            "Memory, \(Format.count(plan.memoryCount)) pending",
            values: ["B/timer", "RSS MiB"], ratios: ["×GCD"])
        var results: [ServiceKind: ProbeResult] = [:]
        let kinds: [ServiceKind] = [.precise, .dispatch, .gcd, .nio]
        for kind in kinds {
            Self.log("memory: \(kind.label)")
            switch ProbeLauncher.run(.memory(kind, count: plan.memoryCount)) {
            case .success(let result): results[kind] = result
            case .failure(let skip): self.report.skipped(kind.label, reason: skip.reason)
            }
        }
        let reference = results[ServiceKind.reference]?["bytes"] ?? .nan
        for kind in kinds {
            guard let result = results[kind] else { continue }
            let bytes = result["bytes"]
            var note = ""
            if kind == .precise {
                note = self.report.check(
                    "≤ 256 B", bytes <= 256,
                    "≤ 256 B per pending timer: \(Format.whole(bytes)) B at \(plan.memoryCount) pending")
            } else if kind == .nio {
                note = "the caller's array of Scheduled handles not counted"
            }
            self.report.row(
                kind.label, values: [Format.whole(bytes), Format.whole(result["rss"] / 1_048_576)],
                ratios: kind == ServiceKind.reference ? [] : [Format.ratio(bytes / reference)], note: note)
            self.figures["memory.\(kind.rawValue).bytesPerTimer"] = bytes
        }
    }
}
