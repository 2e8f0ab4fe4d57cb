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
