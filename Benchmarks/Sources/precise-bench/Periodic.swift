import CFloor
import Foundation
import NIOCore
import NIOPosix
import PreciseTimer
import PreciseTimerReference

/// The 1 ms periodic-timer contestants.
enum Contestant: String, CaseIterable, Sendable {
    case floorNanosleep = "kernel floor (clock_nanosleep)"
    case floorTimerfd = "kernel floor (timerfd)"
    case precise = "PreciseTimer"
    case preciseSpin = "PreciseTimer spin 200 µs"
    case preciseRealtime = "PreciseTimer SCHED_FIFO"
    case dispatch = "DispatchReferenceTimer"
    case nioScheduleTask = "NIO scheduleTask (absolute)"
    case nioRepeated = "NIO scheduleRepeatedTask"
    case foundation = "Foundation Timer (RunLoop)"

    /// One run of `ticks` calls at `interval` nanoseconds; `nil` when the contestant cannot run
    /// here (SCHED_FIFO without permission), with the reason.
    func run(interval: Int64, ticks: Int) -> Result<LatenessRun, BenchmarkSkip> {
        switch self {
        case .floorNanosleep: .success(Self.floor(interval, ticks, cfloor_nanosleep_run))
        case .floorTimerfd: .success(Self.floor(interval, ticks, cfloor_timerfd_run))
        case .precise: Self.service({ try PreciseTimer() }, interval, ticks)
        case .preciseSpin:
            Self.service({ try PreciseTimer(configuration: .init(spinMargin: .microseconds(200))) }, interval, ticks)
        case .preciseRealtime:
            Self.service({ try PreciseTimer(configuration: .init(realtimePriority: 50)) }, interval, ticks)
        case .dispatch: Self.service({ DispatchReferenceTimer() }, interval, ticks)
        case .nioScheduleTask: .success(Self.nio(interval, ticks, repeated: false))
        case .nioRepeated: .success(Self.nio(interval, ticks, repeated: true))
        case .foundation: .success(Self.foundation(interval, ticks))
        }
    }

    private static func floor(
        _ interval: Int64, _ ticks: Int,
        _ body: (Int64, Int32, UnsafeMutablePointer<Int64>) -> Int32
    ) -> LatenessRun {
        var samples = [Int64](repeating: 0, count: ticks)
        _ = samples.withUnsafeMutableBufferPointer { body(interval, Int32(ticks), $0.baseAddress!) }
        return LatenessRun(samples: samples, drift: samples.last ?? 0)
    }

    private static func service(
        _ make: () throws -> any TimerService, _ interval: Int64,
        _ ticks: Int
    ) -> Result<LatenessRun, BenchmarkSkip> {
        let timers: any TimerService
        do {
            timers = try make()
        } catch {
            return .failure(BenchmarkSkip(reason: "\(error)"))
        }
        defer { timers.shutdown() }
        let buffer = SampleBuffer(capacity: ticks)
        do {
            try timers.scheduleRepeating(id: "bench", every: .nanoseconds(interval)) { tick in
                // A fresh read: the same measurement every contestant gets.
                let lateness = Measure.now() - tick.scheduledAt.nanoseconds
                buffer.samples.append(lateness)
                buffer.missed += tick.missed
                buffer.lastLateness = lateness
                if buffer.samples.count == ticks {
                    timers.cancel(tick.id)
                    buffer.done.signal()
                }
            }
        } catch {
            return .failure(BenchmarkSkip(reason: "\(error)"))
        }
        _ = buffer.done.wait(timeout: .now() + .nanoseconds(Int(interval) * ticks * 4) + .seconds(10))
        return .success(buffer.run)
    }

    private static func nio(_ interval: Int64, _ ticks: Int, repeated: Bool) -> LatenessRun {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let buffer = SampleBuffer(capacity: ticks)
        let start = Measure.now()
        if repeated {
            // Fixed delay: NIO re-arms from the end of each run, so it drifts off the grid.
            loop.execute {
                let calls = NIOLoopBoundBox(0, eventLoop: loop)
                loop.scheduleRepeatedTask(initialDelay: .nanoseconds(interval), delay: .nanoseconds(interval)) { task in
                    calls.value += 1
                    let lateness = Measure.now() - (start + Int64(calls.value) * interval)
                    buffer.samples.append(lateness)
                    buffer.lastLateness = lateness
                    if calls.value == ticks {
                        task.cancel()
                        buffer.done.signal()
                    }
                }
            }
        } else {
            @Sendable func arm(_ k: Int) {
                let deadline = start + Int64(k) * interval
                loop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(deadline))) {
                    let lateness = Measure.now() - deadline
                    buffer.samples.append(lateness)
                    buffer.lastLateness = lateness
                    if k == ticks { buffer.done.signal() } else { arm(k + 1) }
                }
            }
            arm(1)
        }
        _ = buffer.done.wait(timeout: .now() + .nanoseconds(Int(interval) * ticks * 4) + .seconds(10))
        return buffer.run
    }

    private static func foundation(_ interval: Int64, _ ticks: Int) -> LatenessRun {
        let buffer = SampleBuffer(capacity: ticks)
        let seconds = Double(interval) / 1e9
        let thread = Thread {
            let first = Measure.now() + interval
            let timer = Timer(fire: Date(timeIntervalSinceNow: seconds), interval: seconds, repeats: true) { timer in
                // Foundation skips missed fires silently: take the latest grid point passed.
                let now = Measure.now()
                let k = max((now - first) / interval, 0)
                let lateness = now - (first + k * interval)
                buffer.samples.append(lateness)
                buffer.lastLateness = lateness
                if buffer.samples.count == ticks {
                    timer.invalidate()
                    buffer.done.signal()
                }
            }
            RunLoop.current.add(timer, forMode: .default)
            while timer.isValid, RunLoop.current.run(mode: .default, before: .distantFuture) {}
        }
        thread.start()
        _ = buffer.done.wait(timeout: .now() + .nanoseconds(Int(interval) * ticks * 4) + .seconds(10))
        return buffer.run
    }
}

/// Why a contestant did not run.
struct BenchmarkSkip: Error, Sendable {
    let reason: String
}
