import Dispatch
import PreciseTimer
import PreciseTimerReference

extension BenchmarkRun {
    /// `withTimeout` around an operation that returns at once, against the usual hand-written
    /// limit: a task group racing the operation against `Task.sleep`. Sequential calls, wall and
    /// process CPU per call, median of interleaved rounds.
    mutating func measureTimeLimits() {
        let plan = self.plan
        let calls = plan.quick ? 5_000 : 20_000
        let contenders: [(label: String, key: String, run: @Sendable (Int) async throws -> Void)] = [
            ("PreciseTimer withTimeout", "precise", Self.limitedCalls(on: { try PreciseTimer() })),
            ("DispatchReferenceTimer withTimeout", "reference", Self.limitedCalls(on: { DispatchReferenceTimer() })),
            ("task group: operation vs Task.sleep", "race", Self.racedCalls),
        ]
        var walls = Array(repeating: [Double](), count: contenders.count)
        var cpus = Array(repeating: [Double](), count: contenders.count)
        for round in 1...plan.rounds {
            Self.log("timeout: round \(round) of \(plan.rounds), \(Format.count(calls)) calls each")
            for (index, contender) in contenders.enumerated() {
                let (wall, cpu) = Self.blocking(calls, contender.run)
                walls[index].append(wall / Double(calls))
                cpus[index].append(cpu / Double(calls))
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let raceCPU = median(cpus[2])
        self.report.section(
            "Time limits: withTimeout(10 s) around an operation that returns at once, per call (ns)",
            values: ["wall", "CPU"], ratios: ["CPU ×race"])
        for (index, contender) in contenders.enumerated() {
            let cpu = median(cpus[index])
            var note = ""
            if contender.key == "precise" {
                note = self.report.check(
                    "≤ race", cpu <= raceCPU,
                    "withTimeout costs no more CPU than racing Task.sleep in a task group: "
                        + "\(Format.count(Int(cpu))) vs \(Format.count(Int(raceCPU))) ns per call")
            }
            self.report.row(
                contender.label, values: [Format.count(Int(median(walls[index]))), Format.count(Int(cpu))],
                ratios: [Format.ratio(cpu / raceCPU)], note: note)
            self.figures["timeout.\(contender.key).cpuPerCall"] = cpu
            self.figures["timeout.\(contender.key).wallPerCall"] = median(walls[index])
        }
    }

    /// `calls` sequential `withTimeout` calls on a service made by `make` (shut down after).
    private static func limitedCalls(
        on make: @escaping @Sendable () throws -> any TimerService
    ) -> @Sendable (Int) async throws -> Void {
        { calls in
            let timers = try make()
            defer { timers.shutdown() }
            for index in 0..<calls {
                _ = try await timers.withTimeout(.seconds(10)) { index }
            }
        }
    }

    /// The same limit written by hand: the operation and a sleep race in a task group, the loser
    /// cancelled.
    private static let racedCalls: @Sendable (Int) async throws -> Void = { calls in
        struct TimedOut: Error {}
        for index in 0..<calls {
            _ = try await withThrowingTaskGroup(of: Int.self) { group in
                group.addTask { index }
                group.addTask {
                    try await Task.sleep(for: .seconds(10))
                    throw TimedOut()
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        }
    }

    /// Runs `body(calls)` as a task and waits for it on this (non-cooperative) thread: wall and
    /// process CPU in nanoseconds.
    private static func blocking(
        _ calls: Int, _ body: @escaping @Sendable (Int) async throws -> Void
    ) -> (wall: Double, cpu: Double) {
        let done = DispatchSemaphore(value: 0)
        let wallStart = Measure.now()
        let cpuStart = Measure.processCPU()
        Task {
            try? await body(calls)
            done.signal()
        }
        done.wait()
        return (Double(Measure.now() - wallStart), Double(Measure.processCPU() - cpuStart))
    }
}
