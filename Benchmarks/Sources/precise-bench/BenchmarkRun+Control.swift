extension BenchmarkRun {
    /// Timer control at `plan.pending` pending, PreciseTimer and DispatchReferenceTimer each in a
    /// fresh child process: `reschedule` against `cancel` + `schedule` (issue 7), `scheduledCount`
    /// against `scheduledIDs.count` at 100 000 pending, and the worst single call (issue 9).
    mutating func measureControl() {
        let plan = self.plan
        let kinds: [ServiceKind] = [.precise, .dispatch]
        var results: [ServiceKind: ProbeResult] = [:]
        for kind in kinds {
            Self.log("control: \(kind.label), \(plan.pending) pending")
            let probe = Probe.control(kind, pending: plan.pending, countAt: plan.countPending, ops: plan.controlOps)
            switch ProbeLauncher.run(probe) {
            case .success(let result): results[kind] = result
            case .failure(let skip): self.report.skipped(kind.label, reason: skip.reason)
            }
        }

        self.report.section(
            "reschedule vs cancel+schedule, \(Format.count(plan.pending)) pending (ns/touch)",
            values: ["wall", "CPU"], ratios: ["wall ×c+s", "CPU ×c+s"])
        for kind in kinds {
            guard let result = results[kind] else { continue }
            let (wall, cpu) = (result["reschedule.wall"], result["reschedule.cpu"])
            let (pairWall, pairCPU) = (result["cancelSchedule.wall"], result["cancelSchedule.cpu"])
            let note = self.report.check(
                "cheaper", wall < pairWall && cpu < pairCPU,
                "\(kind.label) reschedule cheaper than cancel + schedule at \(plan.pending) pending: "
                    + "\(Format.whole(wall)) vs \(Format.whole(pairWall)) ns wall, "
                    + "\(Format.whole(cpu)) vs \(Format.whole(pairCPU)) ns CPU")
            self.report.row(
                "\(kind.label) reschedule", values: [Format.whole(wall), Format.whole(cpu)],
                ratios: [Format.ratio(wall / pairWall), Format.ratio(cpu / pairCPU)], note: note)
            self.report.row(
                "\(kind.label) cancel + schedule, same ID", values: [Format.whole(pairWall), Format.whole(pairCPU)])
            self.figures["control.\(kind.rawValue).reschedule.wall"] = wall
            self.figures["control.\(kind.rawValue).reschedule.cpu"] = cpu
            self.figures["control.\(kind.rawValue).cancelSchedule.wall"] = pairWall
            self.figures["control.\(kind.rawValue).cancelSchedule.cpu"] = pairCPU
        }

        self.report.section(
            "timer count, \(Format.count(plan.countPending)) pending (ns/call)",
            values: ["count", "IDs.count"], ratios: ["IDs ÷ count"])
        for kind in kinds {
            guard let result = results[kind] else { continue }
            let (count, ids) = (result["count.scheduledCount"], result["count.scheduledIDs"])
            self.report.row(
                "\(kind.label) scheduledCount, scheduledIDs.count", values: [Format.whole(count), Format.whole(ids)],
                ratios: [Format.whole(ids / count) + "×"])
            self.figures["control.\(kind.rawValue).scheduledCount"] = count
            self.figures["control.\(kind.rawValue).scheduledIDs.count"] = ids
        }

        self.report.section(
            "worst single call, \(Format.count(plan.pending)) pending (µs)",
            values: ["schedule", "cancel", "reschedule", "p99.9 s", "p99.9 c", "p99.9 r"])
        for kind in kinds {
            guard let result = results[kind] else { continue }
            let names = ["schedule", "cancel", "reschedule"]
            let worst = names.map { result["worst.\($0)"] }.max() ?? .nan
            var note = "one thread; includes its preemption"
            if kind == .precise {
                note =
                    self.report.check(
                        "≤ 1 ms", worst <= 1_000_000,
                        "every single call's lock hold ≤ 1 ms at \(plan.pending) pending: longest "
                            + "\(Format.micro(worst)) µs over \(plan.controlOps) each of schedule, cancel, reschedule")
                    + " · " + note
            }
            self.report.row(
                kind.label,
                values: names.map { Format.micro(result["worst.\($0)"]) }
                    + names.map { Format.micro(result["p999.\($0)"]) },
                note: note)
            for name in names {
                self.figures["control.\(kind.rawValue).worst.\(name)"] = result["worst.\(name)"]
                self.figures["control.\(kind.rawValue).p999.\(name)"] = result["p999.\(name)"]
            }
        }
    }
}
