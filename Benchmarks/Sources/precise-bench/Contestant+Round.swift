import CFloor
import Foundation
import NIOCore
import NIOPosix
import PreciseTimer
import PreciseTimerReference
import Synchronization

extension Contestant {
    /// Runs one round: a fresh timer (or loop) of period `plan.interval` for `ticks` calls.
    ///
    /// Every contestant is measured the same way: a fresh `CLOCK_MONOTONIC` read as the
    /// handler starts, minus the call's deadline on the grid `start + k·interval` this benchmark
    /// computed (never a deadline the service reports). Process CPU is read around the round.
    ///
    /// - Returns: The round, or why this contestant cannot run here.
    func runRound(plan: BenchPlan, ticks: Int) -> Result<LatenessRun, BenchmarkSkip> {
        let interval = plan.interval
        switch self {
        case .floorNanosleep: return Self.floor(interval, ticks, cfloor_nanosleep_run)
        case .floorTimerfd: return Self.floor(interval, ticks, cfloor_timerfd_run)
        case .floorEpoll: return Self.floor(interval, ticks, cfloor_epoll_timerfd_run)
        case .precise:
            return Self.service(interval, ticks) { try PreciseTimer() }
        case .preciseSpin:
            return Self.service(interval, ticks) { try PreciseTimer(configuration: .init(spinMargin: plan.spinMargin)) }
        case .preciseRealtime:
            return Self.service(interval, ticks) {
                try PreciseTimer(configuration: .init(realtimePriority: plan.realtimePriority))
            }
        case .dispatch:
            return Self.service(interval, ticks) { DispatchReferenceTimer() }
        case .preciseClock:
            do {
                let timers = try PreciseTimer()
                defer { timers.shutdown() }
                return Self.sleeper(interval, ticks, clock: timers.clock, start: timers.now)
            } catch {
                return .failure(BenchmarkSkip(reason: "\(error)"))
            }
        case .continuousClock:
            return Self.sleeper(interval, ticks, clock: ContinuousClock(), start: ContinuousClock.now)
        case .gcd: return Self.gcd(interval, ticks)
        case .nioScheduleTask: return Self.nioScheduleTask(interval, ticks)
        case .nioRepeatedTask: return Self.nioRepeatedTask(interval, ticks)
        case .foundation: return Self.foundation(interval, ticks)
        }
    }

    private static func timeout(_ interval: Int64, _ ticks: Int) -> Double {
        Double(interval) * Double(ticks) * 4 / 1e9 + 10
    }

    /// A C loop from `CFloor`, run on this thread.
    private static func floor(
        _ interval: Int64, _ ticks: Int, _ body: (Int64, Int32, UnsafeMutablePointer<Int64>) -> Int32
    ) -> Result<LatenessRun, BenchmarkSkip> {
        var samples = [Int64](repeating: 0, count: ticks)
        let cpuBefore = Measure.processCPU()
        let rc = samples.withUnsafeMutableBufferPointer { body(interval, Int32(ticks), $0.baseAddress!) }
        guard rc == 0 else {
            return .failure(BenchmarkSkip(reason: "failed: \(String(cString: strerror(errno)))"))
        }
        var run = LatenessRun()
        for sample in samples { run.record(lateness: sample) }
        run.drift = samples.last ?? 0
        run.cpu = Measure.processCPU() - cpuBefore
        return .success(run)
    }

    /// A ``TimerService``: one repeating timer on a grid this benchmark chose,
    /// `start + k·interval` with `start` read here, passed as `startingAt`. Lateness and drift are
    /// measured against that grid, never against the tick's `scheduledAt`.
    private static func service(
        _ interval: Int64, _ ticks: Int, _ make: () throws -> any TimerService
    ) -> Result<LatenessRun, BenchmarkSkip> {
        Self.serviceRound(interval, ticks, make, clock: { Measure.now() }, firstAfter: { $0 + interval }) {
            timers, first, handler in
            try timers.scheduleRepeating(
                id: "lateness", every: .nanoseconds(interval), startingAt: MonotonicInstant(nanoseconds: first),
                handler)
        }
    }

    /// One round of a repeating timer of `make`'s service on the grid `first + k·interval` of
    /// `clock`, with `first` chosen from the clock's reading at the start: every call's lateness
    /// is a fresh read of `clock` minus the grid point it answers (k counting called and skipped
    /// periods), never the deadline the service reports.
    static func serviceRound(
        _ interval: Int64, _ ticks: Int, _ make: () throws -> any TimerService,
        clock: @escaping @Sendable () -> Int64, firstAfter: (Int64) -> Int64,
        schedule: (any TimerService, Int64, @escaping @Sendable (Tick) -> Void) throws -> Void
    ) -> Result<LatenessRun, BenchmarkSkip> {
        let timers: any TimerService
        do {
            timers = try make()
        } catch {
            return .failure(BenchmarkSkip(reason: "\(error)"))
        }
        defer { timers.shutdown() }
        let recorder = LatencyRecorder(target: ticks)
        let cpuBefore = Measure.processCPU()
        let start = clock()
        let first = firstAfter(start)
        do {
            try schedule(timers, first) { tick in
                if recorder.record(firedAt: clock(), missed: tick.missed, first: first, interval: interval) {
                    timers.cancel(tick.handle)
                }
            }
        } catch {
            return .failure(BenchmarkSkip(reason: "\(error)"))
        }
        guard recorder.waitUntilDone(timeoutSeconds: Self.timeout(interval, ticks)) else {
            return .failure(BenchmarkSkip(reason: "timed out"))
        }
        var run = recorder.run(start: first - interval, interval: interval)
        run.cpu = Measure.processCPU() - cpuBefore
        return .success(run)
    }

    /// Raw Dispatch: one repeating `DispatchSourceTimer` with zero leeway on a serial queue.
    /// Dispatch reports no deadline and coalesces late fires silently, so each call is measured
    /// against the latest grid point it passed, as for Foundation.
    private static func gcd(_ interval: Int64, _ ticks: Int) -> Result<LatenessRun, BenchmarkSkip> {
        let timers = GCDTimers()
        let recorder = LatencyRecorder(target: ticks)
        let cpuBefore = Measure.processCPU()
        let start = Measure.now()
        let id = Mutex<UInt64?>(nil)
        let timer = timers.scheduleRepeating(every: .nanoseconds(interval), startingAfter: .nanoseconds(interval)) {
            if recorder.recordOnGrid(firedAt: Measure.now(), first: start + interval, interval: interval) {
                if let id = id.withLock({ $0 }) { timers.cancel(id) }
            }
        }
        id.withLock { $0 = timer }
        guard recorder.waitUntilDone(timeoutSeconds: Self.timeout(interval, ticks)) else {
            timers.cancel(timer)
            return .failure(BenchmarkSkip(reason: "timed out"))
        }
        timers.cancel(timer)
        var run = recorder.run(start: start, interval: interval)
        run.cpu = Measure.processCPU() - cpuBefore
        return .success(run)
    }

    /// One task sleeping until `start + k·interval` on `clock`, k = 1, 2, …: lateness is the
    /// clock's own reading after the wake-up minus that deadline (the same rate as
    /// `CLOCK_MONOTONIC` for both clocks measured here).
    private static func sleeper<C: Clock>(
        _ interval: Int64, _ ticks: Int, clock: C, start: C.Instant
    ) -> Result<LatenessRun, BenchmarkSkip> where C.Duration == Duration {
        let recorder = LatencyRecorder(target: ticks)
        let cpuBefore = Measure.processCPU()
        let measuredStart = Measure.now()
        let task = Task.detached {
            var k: Int64 = 1
            while true {
                let deadline = start.advanced(by: .nanoseconds(k * interval))
                do { try await clock.sleep(until: deadline, tolerance: .zero) } catch { return }
                let lateness = deadline.duration(to: clock.now)
                let nanoseconds =
                    lateness.components.seconds * 1_000_000_000 + lateness.components.attoseconds / 1_000_000_000
                if recorder.record(lateness: nanoseconds, firedAt: Measure.now()) { return }
                k += 1
            }
        }
        guard recorder.waitUntilDone(timeoutSeconds: Self.timeout(interval, ticks)) else {
            task.cancel()
            return .failure(BenchmarkSkip(reason: "timed out"))
        }
        var run = recorder.run(start: measuredStart, interval: interval)
        run.cpu = Measure.processCPU() - cpuBefore
        return .success(run)
    }

    /// NIO `scheduleTask(deadline:)`: each task schedules the next at `start + (k + 1)·interval`,
    /// so NIO gets the same fixed-rate grid as the others.
    private static func nioScheduleTask(_ interval: Int64, _ ticks: Int) -> Result<LatenessRun, BenchmarkSkip> {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let recorder = LatencyRecorder(target: ticks)
        let cpuBefore = Measure.processCPU()
        let start = Measure.now()
        @Sendable func arm(_ k: Int64) {
            let deadline = start + k * interval
            _ = loop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(deadline))) {
                let now = Measure.now()
                if !recorder.record(lateness: now - deadline, firedAt: now) { arm(k + 1) }
            }
        }
        loop.execute { arm(1) }
        guard recorder.waitUntilDone(timeoutSeconds: Self.timeout(interval, ticks)) else {
            return .failure(BenchmarkSkip(reason: "timed out"))
        }
        var run = recorder.run(start: start, interval: interval)
        run.cpu = Measure.processCPU() - cpuBefore
        return .success(run)
    }

    /// NIO `scheduleRepeatedTask`: fixed *delay*, each run scheduled `interval` after the previous
    /// one ended. Lateness is against that deadline (the end is read as the handler returns, a
    /// hair before NIO reads it, so this errs late); the drift is against the fixed-rate grid.
    private static func nioRepeatedTask(_ interval: Int64, _ ticks: Int) -> Result<LatenessRun, BenchmarkSkip> {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let recorder = LatencyRecorder(target: ticks)
        let cpuBefore = Measure.processCPU()
        let start = Measure.now()
        loop.execute {
            let previousEnd = NIOLoopBoundBox(Measure.now(), eventLoop: loop)
            loop.scheduleRepeatedTask(initialDelay: .nanoseconds(interval), delay: .nanoseconds(interval)) { task in
                let now = Measure.now()
                if recorder.record(lateness: now - (previousEnd.value + interval), firedAt: now) {
                    task.cancel()
                }
                previousEnd.value = Measure.now()
            }
        }
        guard recorder.waitUntilDone(timeoutSeconds: Self.timeout(interval, ticks)) else {
            return .failure(BenchmarkSkip(reason: "timed out"))
        }
        var run = recorder.run(start: start, interval: interval)
        run.cpu = Measure.processCPU() - cpuBefore
        return .success(run)
    }

    /// Foundation `Timer` on a thread of its own running its `RunLoop`. `Timer` reports no
    /// deadline and skips late fires silently, so each call is measured against the latest grid
    /// point it passed, and grid points jumped over count as missed.
    private static func foundation(_ interval: Int64, _ ticks: Int) -> Result<LatenessRun, BenchmarkSkip> {
        let recorder = LatencyRecorder(target: ticks)
        let seconds = Double(interval) / 1e9
        let cpuBefore = Measure.processCPU()
        // A few periods' lead, so that the thread is running before the first deadline.
        let first = Measure.now() + 5 * interval
        let thread = Thread {
            let fireDate = Date(timeIntervalSinceNow: Double(first - Measure.now()) / 1e9)
            let timer = Timer(fire: fireDate, interval: seconds, repeats: true) { timer in
                if recorder.recordOnGrid(firedAt: Measure.now(), first: first, interval: interval) {
                    timer.invalidate()
                }
            }
            RunLoop.current.add(timer, forMode: .default)
            while timer.isValid, RunLoop.current.run(mode: .default, before: .distantFuture) {}
        }
        thread.start()
        guard recorder.waitUntilDone(timeoutSeconds: Self.timeout(interval, ticks)) else {
            return .failure(BenchmarkSkip(reason: "timed out"))
        }
        var run = recorder.run(start: first - interval, interval: interval)
        run.cpu = Measure.processCPU() - cpuBefore
        return .success(run)
    }
}
