import NIOCore
import NIOPosix
import PreciseTimer

/// The fire storm: `count` one-shots due at the same instant (run in a child process).
enum StormBenchmark {
    /// Time the services get to take in every one-shot before the deadline.
    private static let lead: Int64 = 2_000_000_000

    /// Schedules `count` one-shots whose deadline is one instant, `lead` from now (each asks for
    /// `deadline − now`, so the service's own deadline is that instant plus the few nanoseconds
    /// its clock read comes later), then waits for the last handler.
    ///
    /// Every timer gets the same handler, made once, as the peers' storms do (Go passes one `func`
    /// to every `AfterFunc`, `DelayQueue` holds a number): what is measured is the service, not
    /// the allocation and release of a closure per timer (see ``TimerServiceScale``, whose
    /// adapter would wrap each handler in one more).
    /// - Returns: Figures `first`, `last` (nanoseconds from the deadline to the first and the last
    ///   handler) and `overrun` (how far past the deadline scheduling finished; ≤ 0 is fair).
    static func run(_ kind: ServiceKind, count: Int) throws -> (figures: [String: Double], keepAlive: AnyObject) {
        let counter = StormCounter(target: count)
        let fire: @Sendable () -> Void = { counter.fire() }
        let deadline = Measure.now() + Self.lead
        let keepAlive: AnyObject
        switch kind {
        case .nio:
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let loop = group.next()
            for _ in 0..<count {
                _ = loop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(deadline)), fire)
            }
            keepAlive = group
        case .precise, .dispatch:
            let timers = try kind.makeTimerService()
            let handler: @Sendable (Tick) -> Void = { _ in counter.fire() }
            for _ in 0..<count {
                try timers.schedule(after: .nanoseconds(deadline - Measure.now()), handler)
            }
            keepAlive = timers
        default:
            let timers = try kind.makeScaleService()
            for _ in 0..<count {
                try timers.oneShot(after: .nanoseconds(deadline - Measure.now()), fire)
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
