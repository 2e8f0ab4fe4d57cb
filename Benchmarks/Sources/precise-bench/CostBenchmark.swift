import CLimit
import Dispatch
import NIOCore
import NIOPosix

/// Schedule + cancel cost per timer with many timers pending (run in a child process).
///
/// The service is filled with `pending` timers an hour away, then each caller thread times
/// `pairs / threads` pairs of (schedule a new timer, cancel an old one), so the pending count
/// stays constant. *Wall* is the caller's time per pair (the slowest thread's loop time over its
/// pairs); *CPU* is the whole process's CPU time over the pairs (getrusage), so work a service
/// pushes to its own threads counts too, up to the moment it has caught up.
enum CostBenchmark {
    /// Measures a ``TimerService`` or raw Dispatch.
    /// - Returns: Figures `wall`, `cpu` and `fill` in nanoseconds per timer.
    static func run<Service: ScaleService>(
        _ timers: Service, pending: Int, pairs: Int, threads: Int, order: CancelOrder
    ) throws -> [String: Double] {
        let perThread = pending / threads
        let pairsPerThread = pairs / threads
        let fillStart = Measure.now()
        var slices: [[Service.Handle]] = []
        for _ in 0..<threads {
            var ids: [Service.Handle] = []
            ids.reserveCapacity(perThread)
            for _ in 0..<perThread { ids.append(try timers.oneShot(after: .seconds(3_600)) {}) }
            slices.append(ids)
        }
        let fill = Measure.now() - fillStart
        try timers.settle()
        let workers = slices.indices.map { index in
            let slots = order.victims(count: pairsPerThread, pending: perThread, seed: 42 + UInt64(index))
            return CostWorker<Service>(victims: slots.map { slices[index][$0] })
        }
        slices = []

        let cpuBefore = Measure.processCPU()
        DispatchQueue.concurrentPerform(iterations: threads) { index in
            workers[index].run(on: timers)
        }
        try timers.settle()
        let cpu = Measure.processCPU() - cpuBefore

        let failures = workers.map(\.failureCount).reduce(0, +)
        guard failures == 0 else { throw BenchmarkSkip(reason: "\(failures) schedules or cancels failed") }
        let wall = workers.map(\.wall).max() ?? 0
        return [
            "wall": Double(wall) / Double(pairsPerThread),
            "cpu": Double(cpu) / Double(pairsPerThread * threads),
            "fill": Double(fill) / Double(perThread * threads),
        ]
    }

    /// The limit row: ``run(_:pending:pairs:threads:order:)``'s work in plain C (`CLimit`), the
    /// fill, the gathering of victims and the timed loop all in C, so no Swift runs in the loop.
    ///
    /// The victims are drawn here, with the same ``CancelOrder/victims(count:pending:seed:)`` and
    /// seeds as for the services, so the C registry cancels the same slots in the same order. Like
    /// the services' rows, one registry is shared by every thread, each thread cancelling in its
    /// own slice of the pending timers.
    ///
    /// With more than one thread the run is made four times, on fresh registries, sharing less
    /// each time (`climit_sharing`): the registry and its one sequence, as PreciseTimer does
    /// (`wall`, `cpu`); the registry, each thread numbering its timers itself (`own.wall`,
    /// `own.cpu`); nothing, a registry and a sequence per thread (`apart.wall`, `apart.cpu`); and
    /// only the sequence, a registry per thread (`sequenceOnly.wall`, `sequenceOnly.cpu`). Against
    /// the one-thread row, they say what a second thread costs this machine for each thing the
    /// threads share; the last is what the one order of equal deadlines across threads costs with
    /// nothing else shared.
    /// - Returns: Figures `wall`, `cpu` and `fill` in nanoseconds per timer, as for the services,
    ///   and the three other runs' for more than one thread.
    static func runCLimit(pending: Int, pairs: Int, threads: Int, order: CancelOrder) throws -> [String: Double] {
        let perThread = pending / threads
        let pairsPerThread = pairs / threads
        var victims: [Int32] = []
        victims.reserveCapacity(pairsPerThread * threads)
        for index in 0..<threads {
            let slots = order.victims(count: pairsPerThread, pending: perThread, seed: 42 + UInt64(index))
            victims += slots.map { Int32($0) }
        }
        func run(_ sharing: climit_sharing) throws -> climit_result {
            var result = climit_result()
            let status = victims.withUnsafeBufferPointer { buffer in
                climit_run(
                    Self.cLimitShardBits, Int32(pending), Int32(pairsPerThread), Int32(threads), sharing,
                    buffer.baseAddress!, &result)
            }
            guard status == 0 else { throw BenchmarkSkip(reason: "a C schedule or cancel failed, or its check did") }
            return result
        }
        let shared = try run(CLIMIT_SHARE_ALL)
        var figures = ["wall": shared.wall_per_pair, "cpu": shared.cpu_per_pair, "fill": shared.fill_per_timer]
        if threads > 1 {
            let runs = [
                ("own", CLIMIT_SHARE_REGISTRY_ONLY), ("apart", CLIMIT_SHARE_NOTHING),
                ("sequenceOnly", CLIMIT_SHARE_SEQUENCE_ONLY),
            ]
            for (name, sharing) in runs {
                let result = try run(sharing)
                figures["\(name).wall"] = result.wall_per_pair
                figures["\(name).cpu"] = result.cpu_per_pair
            }
        }
        return figures
    }

    /// 2^6 = 64 shards, as PreciseTimer's registry (`TimerCore.shardCount`): each call takes one
    /// shard's mutex, and two threads meet on one once in 64 calls.
    private static let cLimitShardBits: Int32 = 6

    /// Measures NIO's `scheduleTask` + `Scheduled.cancel()` from one thread off the loop.
    ///
    /// NIO keeps scheduled tasks in a binary heap and removes a cancelled one with
    /// `firstIndex(of:)`: a linear scan on the loop thread. Wall here runs until the loop has
    /// processed every cancel, because until then the task may still run.
    static func runNIO(pending: Int, pairs: Int, order: CancelOrder) throws -> [String: Double] {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let fillStart = Measure.now()
        var tasks: [Scheduled<Void>] = []
        tasks.reserveCapacity(pending)
        for _ in 0..<pending { tasks.append(loop.scheduleTask(in: .hours(1)) {}) }
        try loop.submit {}.wait()
        let fill = Measure.now() - fillStart
        // Distinct victims, gathered before timing (see CostWorker); the new tasks are never
        // cancelled during the loop, so their handles are not kept.
        let victims = order.victims(count: pairs, pending: pending, seed: 42).map { tasks[$0] }

        let cpuBefore = Measure.processCPU()
        let start = Measure.now()
        for victim in victims {
            _ = loop.scheduleTask(in: .hours(1)) {}
            victim.cancel()
        }
        try loop.submit {}.wait()
        let wall = Measure.now() - start
        let cpu = Measure.processCPU() - cpuBefore
        withExtendedLifetime(tasks) {}
        return [
            "wall": Double(wall) / Double(pairs),
            "cpu": Double(cpu) / Double(pairs),
            "fill": Double(fill) / Double(pending),
        ]
    }
}
