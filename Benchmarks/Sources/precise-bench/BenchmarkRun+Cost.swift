extension BenchmarkRun {
    /// Schedule + cancel per timer at `plan.pending` pending: PreciseTimer, DispatchReferenceTimer and raw GCD in FIFO and
    /// random order from 1 and 2 threads, NIO at smaller counts; each in a fresh child process.
    mutating func measureCost() {
        let plan = self.plan
        self.report.section(
            "schedule+cancel, \(Format.count(plan.pending)) pending (ns/timer)",
            values: ["wall", "CPU", "fill"],
            ratios: ["wall ×GCD", "CPU ×GCD"])
        var wallByOrder: [CancelOrder: [Int: Double]] = [:]
        for order in CancelOrder.allCases {
            for threads in [1, 2] {
                let shape = "\(order.rawValue), \(threads) thread\(threads == 1 ? "" : "s")"
                var results: [ServiceKind: ProbeResult] = [:]
                for kind in [ServiceKind.precise, .dispatch, .gcd] {
                    Self.log("cost: \(kind.label), \(shape)")
                    let probe = Probe.cost(kind, order, threads: threads, pending: plan.pending, pairs: plan.pairs)
                    switch ProbeLauncher.run(probe) {
                    case .success(let result): results[kind] = result
                    case .failure(let skip): self.report.skipped("\(kind.label), \(shape)", reason: skip.reason)
                    }
                }
                let reference = results[ServiceKind.reference]
                for kind in [ServiceKind.precise, .dispatch, .gcd] {
                    guard let result = results[kind] else { continue }
                    let (wall, cpu) = (result["wall"], result["cpu"])
                    var note = ""
                    if kind == .precise {
                        wallByOrder[order, default: [:]][threads] = wall
                        note = self.report.check(
                            "≤ 1 µs", wall <= 1_000 && cpu <= 1_000,
                            "schedule + cancel ≤ 1 µs wall and ≤ 1 µs CPU per timer at \(plan.pending) pending, "
                                + "\(shape): \(Format.whole(wall)) ns wall, \(Format.whole(cpu)) ns CPU")
                    }
                    self.report.row(
                        "\(kind.label), \(shape)",
                        values: [Format.whole(wall), Format.whole(cpu), Format.whole(result["fill"])],
                        ratios: kind == ServiceKind.reference
                            ? []
                            : [
                                Format.ratio(wall / (reference?["wall"] ?? .nan)),
                                Format.ratio(cpu / (reference?["cpu"] ?? .nan)),
                            ],
                        note: note)
                    let key = "cost.\(kind.rawValue).\(order).\(threads)"
                    self.figures["\(key).wall"] = wall
                    self.figures["\(key).cpu"] = cpu
                    self.figures["\(key).fill"] = result["fill"]
                }
            }
        }
        if let fifo = wallByOrder[.fifo]?[1], let random = wallByOrder[.random]?[1] {
            self.figures["cost.precise.randomOverFifo"] = random / fifo
        }
        for pending in plan.nioPending {
            for order in CancelOrder.allCases {
                Self.log("cost: NIO scheduleTask, \(pending) pending, \(order.rawValue)")
                let label = "NIO, \(order.rawValue), 1 thread, \(Format.count(pending)) pending"
                switch ProbeLauncher.run(.cost(.nio, order, threads: 1, pending: pending, pairs: plan.nioPairs)) {
                case .success(let result):
                    self.report.row(
                        label,
                        values: [
                            Format.whole(result["wall"]), Format.whole(result["cpu"]), Format.whole(result["fill"]),
                        ],
                        note: "cancel = linear scan of its heap")
                    self.figures["cost.nio.\(order).\(pending).wall"] = result["wall"]
                    self.figures["cost.nio.\(order).\(pending).cpu"] = result["cpu"]
                case .failure(let skip):
                    self.report.skipped(label, reason: skip.reason)
                }
            }
        }
    }
}
