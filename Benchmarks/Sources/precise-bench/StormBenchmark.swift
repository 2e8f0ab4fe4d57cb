import NIOCore
import NIOPosix

/// The fire storm: `count` one-shots due at the same instant (run in a child process).
enum StormBenchmark {
    /// Time the services get to take in every one-shot before the deadline.
    private static let lead: Int64 = 2_000_000_000

    /// Schedules `count` one-shots whose deadline is one instant, `lead` from now (each asks for
    /// `deadline − now`, so the service's own deadline is that instant plus the few nanoseconds
    /// its clock read comes later), then waits for the last handler.
    /// - Returns: Figures `first`, `last` (nanoseconds from the deadline to the first and the last
    ///   handler) and `overrun` (how far past the deadline scheduling finished; ≤ 0 is fair).
    static func run(_ kind: ServiceKind, count: Int) throws -> (figures: [String: Double], keepAlive: AnyObject) {
        let counter = StormCounter(target: count)
        let deadline = Measure.now() + Self.lead
        let keepAlive: AnyObject
        if kind == .nio {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let loop = group.next()
            for _ in 0..<count {
                _ = loop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(deadline))) { counter.fire() }
            }
            keepAlive = group
        } else {
            let timers = try kind.makeScaleService()
            for _ in 0..<count {
                try timers.oneShot(after: .nanoseconds(deadline - Measure.now())) { counter.fire() }
            }
            keepAlive = timers.keepAlive
        }
        let overrun = Measure.now() - deadline
        guard let (first, last) = counter.wait(timeoutSeconds: 120) else {
            throw BenchmarkSkip(reason: "the storm did not finish within 120 s")
        }
        return (
            ["first": Double(first - deadline), "last": Double(last - deadline), "overrun": Double(overrun)],
            keepAlive
        )
    }
}
