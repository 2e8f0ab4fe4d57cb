import Foundation
import NIOCore
import NIOPosix
import PreciseTimer
import PreciseTimerReference

/// Cost, memory and fire-storm measurements at scale.
enum Scale {
    /// Per-pair cost of schedule + cancel with `pending` timers already scheduled.
    struct Cost: Sendable {
        var wallPerPair: Double  // ns of the caller's time
        var cpuPerPair: Double  // ns of process CPU
    }

    enum Order: String, Sendable { case fifo = "FIFO", random }

    /// Fills the service with `pending` far-away timers, then times `pairs` schedule+cancel pairs
    /// spread over `threads` threads: each schedules a new timer and cancels an old one (the
    /// oldest, or a random one), so the pending count stays constant.
    static func scheduleCancel(
        _ timers: any TimerService, pending: Int, pairs: Int, threads: Int,
        order: Order
    ) throws -> Cost {
        let perThread = pending / threads
        var slices: [[TimerID]] = []
        for _ in 0..<threads {
            var ids: [TimerID] = []
            ids.reserveCapacity(perThread)
            for _ in 0..<perThread { ids.append(try timers.schedule(after: .seconds(3_600)) { _ in }) }
            slices.append(ids)
        }
        var orders: [[Int]] = []
        var generator = SplitMix(seed: 42)
        for _ in 0..<threads {
            let count = pairs / threads
            orders.append(
                order == .fifo
                    ? (0..<count).map { $0 % perThread }
                    : (0..<count).map { _ in Int(generator.next() % UInt64(perThread)) })
        }
        let workers = slices.map { Worker(ids: $0) }
        let plan = orders
        let cpuBefore = Measure.processCPU()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let worker = workers[thread]
            let start = Measure.now()
            for index in plan[thread] {
                let id = try! timers.schedule(after: .seconds(3_600)) { _ in }
                timers.cancel(worker.ids[index])
                worker.ids[index] = id
            }
            worker.wall = Measure.now() - start
        }
        let cpu = Measure.processCPU() - cpuBefore
        timers.cancelAll()
        let perThreadPairs = Double(pairs / threads)
        return Cost(
            wallPerPair: Double(workers.map(\.wall).max() ?? 0) / perThreadPairs,
            cpuPerPair: Double(cpu) / Double(pairs))
    }

    /// NIO: schedule + cancel pairs on an event loop with `pending` tasks (cancel scans its heap).
    static func nioScheduleCancel(pending: Int, pairs: Int) throws -> Cost {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        var tasks = (0..<pending).map { _ in loop.scheduleTask(in: .hours(1)) {} }
        let cpuBefore = Measure.processCPU()
        let start = Measure.now()
        for index in 0..<pairs {
            let slot = index % pending
            let task = loop.scheduleTask(in: .hours(1)) {}
            tasks[slot].cancel()
            tasks[slot] = task
        }
        // Cancels are executed on the loop: wait until it has drained them.
        try loop.submit {}.wait()
        let wall = Measure.now() - start
        let cpu = Measure.processCPU() - cpuBefore
        tasks.forEach { $0.cancel() }
        return Cost(wallPerPair: Double(wall) / Double(pairs), cpuPerPair: Double(cpu) / Double(pairs))
    }

    /// RSS growth per pending timer; run in a fresh process (see `MemoryProbe`).
    static func memoryPerTimer(contestant: String, count: Int) throws -> Double {
        let before = Measure.residentBytes()
        switch contestant {
        case "precise":
            let timers = try PreciseTimer()
            for _ in 0..<count { try timers.schedule(after: .seconds(3_600)) { _ in } }
            let after = Measure.residentBytes()
            withExtendedLifetime(timers) {}
            return Double(after - before) / Double(count)
        case "dispatch":
            let timers = DispatchReferenceTimer()
            for _ in 0..<count { try timers.schedule(after: .seconds(3_600)) { _ in } }
            let after = Measure.residentBytes()
            withExtendedLifetime(timers) {}
            return Double(after - before) / Double(count)
        default:
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let loop = group.next()
            var tasks: [Scheduled<Void>] = []
            tasks.reserveCapacity(count)
            let reserved = Measure.residentBytes()  // The array of handles is the benchmark's, not NIO's.
            for _ in 0..<count { tasks.append(loop.scheduleTask(in: .hours(1)) {}) }
            try loop.submit {}.wait()
            let after = Measure.residentBytes()
            withExtendedLifetime(tasks) {}
            return Double(after - reserved) / Double(count)
        }
    }

    /// `count` one-shots due at the same instant: time from that instant to the last handler.
    static func fireStorm(_ timers: any TimerService, count: Int) throws -> Int64 {
        let deadline = Measure.now() + 1_000_000_000
        let fired = SliceBox([Int64(0), 0])  // Written only by the service's one handler thread.
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            try timers.schedule(after: .nanoseconds(deadline - Measure.now())) { _ in
                // .loop handlers of one service run one at a time.
                fired.values[0] += 1
                if fired.values[0] == Int64(count) {
                    fired.values[1] = Measure.now()
                    done.signal()
                }
            }
        }
        _ = done.wait(timeout: .now() + .seconds(60))
        return fired.values[1] - deadline
    }

    /// Process CPU while one 1 s repeating timer idles for `seconds`.
    static func idleCPU(_ timers: any TimerService, seconds: Int) throws -> Int64 {
        try timers.scheduleRepeating(every: .seconds(1)) { _ in }
        let before = Measure.processCPU()
        Thread.sleep(forTimeInterval: Double(seconds))
        let cpu = Measure.processCPU() - before
        timers.cancelAll()
        return cpu
    }

    /// `count` 1 ms periodic timers, phases spread over the period, for `seconds`.
    static func concurrentPeriodic(_ timers: any TimerService, count: Int, seconds: Double) throws -> LatenessRun {
        let buffers = (0..<count).map { _ in SampleBuffer(capacity: Int(seconds * 1_000) + 8) }
        let interval: Int64 = 1_000_000
        for index in 0..<count {
            let buffer = buffers[index]
            try timers.scheduleRepeating(
                every: .nanoseconds(interval),
                startingAfter: .nanoseconds(interval + Int64(index) * interval / Int64(count))
            ) {
                tick in
                buffer.samples.append(Measure.now() - tick.scheduledAt.nanoseconds)
                buffer.missed += tick.missed
            }
        }
        Thread.sleep(forTimeInterval: seconds)
        timers.cancelAll()
        Thread.sleep(forTimeInterval: 0.05)
        var run = LatenessRun()
        for buffer in buffers { run.append(buffer.run) }
        return run
    }
}

/// One thread's IDs and timing in the cost benchmark.
final class Worker: @unchecked Sendable {
    // Invariant: used by one worker thread, then read by the owner after concurrentPerform joined.
    var ids: [TimerID]
    var wall: Int64 = 0
    init(ids: [TimerID]) { self.ids = ids }
}

/// Mutable storage shared with worker threads that each touch only their own slot.
final class SliceBox<Value>: @unchecked Sendable {
    // Invariant: thread i reads and writes only values[i]; the owner reads after they joined.
    var values: [Value]
    init(_ values: [Value]) { self.values = values }
}

/// A seeded generator, so runs are comparable.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
