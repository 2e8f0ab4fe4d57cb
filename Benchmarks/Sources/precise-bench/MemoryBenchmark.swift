import NIOCore
import NIOPosix

/// Resident memory per pending timer (run in a child process, so that a heap some earlier
/// measurement already grew cannot hide the growth).
enum MemoryBenchmark {
    /// Schedules `count` timers an hour away and divides the RSS growth (`/proc/self/statm`) by
    /// `count`. The service is kept alive by the caller until the figures are printed.
    /// - Returns: Figures `bytes` (per timer) and `rss` (growth in bytes), plus the service.
    static func run(_ kind: ServiceKind, count: Int) throws -> (figures: [String: Double], keepAlive: AnyObject) {
        if kind == .nio { return try Self.runNIO(count: count) }
        return try Self.run(kind.makeScaleService(), count: count)
    }

    private static func run(
        _ timers: some ScaleService, count: Int
    ) throws -> (figures: [String: Double], keepAlive: AnyObject) {
        try timers.settle()
        let before = Measure.residentBytes()
        for _ in 0..<count { try timers.oneShot(after: .seconds(3_600)) {} }
        try timers.settle()
        let growth = Measure.residentBytes() - before
        return (["bytes": Double(growth) / Double(count), "rss": Double(growth)], timers.keepAlive)
    }

    /// NIO: the caller must keep each `Scheduled` handle to cancel a task; the array slots
    /// holding them (`MemoryLayout<Scheduled<Void>>.stride` each) are the benchmark's and are
    /// subtracted, the objects they point to are NIO's and count.
    private static func runNIO(count: Int) throws -> (figures: [String: Double], keepAlive: AnyObject) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        try loop.submit {}.wait()
        var tasks: [Scheduled<Void>] = []
        tasks.reserveCapacity(count)
        let before = Measure.residentBytes()
        for _ in 0..<count { tasks.append(loop.scheduleTask(in: .hours(1)) {}) }
        try loop.submit {}.wait()
        let growth = Measure.residentBytes() - before - count * MemoryLayout<Scheduled<Void>>.stride
        withExtendedLifetime(tasks) {}
        return (["bytes": Double(growth) / Double(count), "rss": Double(growth)], group)
    }
}
