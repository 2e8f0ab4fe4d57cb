import Dispatch
import NIOCore
import NIOPosix
import Synchronization

/// The fire storm: `count` one-shots due at the same instant (run in a child process).
enum StormBenchmark {
    /// Time the services get to take in every one-shot before the deadline.
    private static let lead: Int64 = 2_000_000_000

    /// Schedules `count` one-shots whose deadline is one instant, `lead` from now (each asks for
    /// `deadline − now`, so the service's own deadline is that instant plus the few nanoseconds
    /// its clock read comes later), then waits for the last handler, then for the timers of
    /// ``tail(on:)``.
    /// - Returns: Figures `first`, `last` (nanoseconds from the deadline to the first and the last
    ///   handler), `overrun` (how far past the deadline scheduling finished; ≤ 0 is fair) and
    ///   `tail` (``tail(on:)``; -1 for NIO, whose loop is not behind a ``ScaleService``).
    static func run(_ kind: ServiceKind, count: Int) throws -> (figures: [String: Double], keepAlive: AnyObject) {
        let counter = StormCounter(target: count)
        let deadline = Measure.now() + Self.lead
        let keepAlive: AnyObject
        var service: (any ScaleService)? = nil
        if kind == .nio {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let loop = group.next()
            for _ in 0..<count {
                _ = loop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(deadline))) { counter.fire() }
            }
            keepAlive = group
        } else {
            let timers = try kind.makeScaleService()
            service = timers
            for _ in 0..<count {
                try timers.oneShot(after: .nanoseconds(deadline - Measure.now())) { counter.fire() }
            }
            keepAlive = timers.keepAlive
        }
        let overrun = Measure.now() - deadline
        guard let (first, last) = counter.wait(timeoutSeconds: 120) else {
            throw BenchmarkSkip(reason: "the storm did not finish within 120 s")
        }
        let tail = try service.map { try Self.tail(on: $0) } ?? -1
        return (
            [
                "first": Double(first - deadline), "last": Double(last - deadline), "overrun": Double(overrun),
                "tail": tail,
            ],
            keepAlive
        )
    }

    /// Timers due just after a storm: one-shots 1, 2, ... 20 ms after the moment the last handler
    /// was seen, scheduled at once. What the loop does once the storm is over (releasing what it
    /// took) must not make them late.
    /// - Returns: The worst lateness among them, in nanoseconds.
    private static func tail(on timers: any ScaleService) throws -> Double {
        let count = 20
        let start = Measure.now()
        let worst = Atomic<Int64>(0)
        let done = DispatchSemaphore(value: 0)
        for index in 1...count {
            let due = start + Int64(index) * 1_000_000
            try timers.oneShot(after: .nanoseconds(max(0, due - Measure.now()))) {
                worst.max(Measure.now() - due, ordering: .relaxed)
                done.signal()
            }
        }
        for _ in 0..<count {
            guard done.wait(timeout: .now() + 10) == .success else {
                throw BenchmarkSkip(reason: "a timer after the storm did not fire within 10 s")
            }
        }
        return Double(worst.load(ordering: .relaxed))
    }
}
