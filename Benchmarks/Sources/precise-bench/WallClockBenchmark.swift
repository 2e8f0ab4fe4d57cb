import Foundation
import PreciseTimer

/// The wall-clock section's measurements: a 1 ms wall-clock schedule against a 1 ms monotonic
/// timer on the same service kind, and process CPU with a daily wall-clock timer pending.
enum WallClockBenchmark {
    /// Every `interval` nanoseconds on the wall clock, at whole multiples since the epoch.
    struct Grid: WallClockSchedule {
        let interval: Int64

        func next(after instant: WallClockInstant) -> WallClockInstant? {
            let t = instant.nanosecondsSinceEpoch
            return WallClockInstant(nanosecondsSinceEpoch: (t / self.interval + 1) * self.interval)
        }
    }

    /// `CLOCK_REALTIME` in nanoseconds.
    static func wallNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// One round of a wall-clock schedule every `interval` of `make`'s service: lateness is a
    /// fresh `CLOCK_REALTIME` read as the handler starts minus the occurrence the call answers.
    static func lateness(
        _ interval: Int64, _ ticks: Int, _ make: () throws -> any TimerService
    ) -> Result<LatenessRun, BenchmarkSkip> {
        let grid = Grid(interval: interval)
        return Contestant.serviceRound(
            interval, ticks, make, clock: { Self.wallNow() },
            firstAfter: { grid.next(after: WallClockInstant(nanosecondsSinceEpoch: $0))!.nanosecondsSinceEpoch }
        ) { timers, _, handler in
            try timers.scheduleRepeating(id: "wall", on: grid, handler)
        }
    }

    /// Process CPU over `seconds` with one daily wall-clock timer pending on a `PreciseTimer`
    /// (run in a child process, like the idle section).
    static func idleDaily(seconds: Int) throws -> (figures: [String: Double], keepAlive: AnyObject?) {
        let timers = try PreciseTimer()
        try timers.scheduleRepeating(id: "daily", on: Grid(interval: 86_400_000_000_000)) { _ in }
        Measure.sleep(seconds: 0.5)
        let before = Measure.processCPU()
        Measure.sleep(seconds: Double(seconds))
        let cpu = Measure.processCPU() - before
        return (["cpu": Double(cpu), "seconds": Double(seconds)], timers)
    }
}
