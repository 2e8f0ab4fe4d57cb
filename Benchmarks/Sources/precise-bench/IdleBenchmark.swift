import NIOCore
import NIOPosix
import PreciseTimer

/// Process CPU while a single 1 s repeating timer idles (run in a child process, several at
/// once: idle children hardly compete).
enum IdleBenchmark {
    /// Starts the timer, lets start-up settle for half a second, then reads process CPU over
    /// `seconds`.
    /// - Returns: Figures `cpu` (nanoseconds over the whole window) and `seconds`.
    static func run(_ kind: ServiceKind, seconds: Int) throws -> (figures: [String: Double], keepAlive: AnyObject?) {
        var keepAlive: AnyObject?
        switch kind {
        case .none:
            break
        case .nio:
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            _ = group.next().scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in }
            keepAlive = group
        case .climit, .libevent:
            throw BenchmarkSkip(reason: "the C rows measure schedule + cancel only")
        case .precise, .dispatch, .gcd:
            let timers = try kind.makeScaleService()
            try timers.repeating(every: 1_000_000_000, first: Measure.now() + 1_000_000_000) { _ in }
            keepAlive = timers.keepAlive
        }
        Measure.sleep(seconds: 0.5)
        let before = Measure.processCPU()
        Measure.sleep(seconds: Double(seconds))
        let cpu = Measure.processCPU() - before
        return (["cpu": Double(cpu), "seconds": Double(seconds)], keepAlive)
    }

    /// Process CPU over `seconds` with `count` one-shots a day away pending on a `PreciseTimer`:
    /// a pending timer must cost no wake-up (issue 16: ≤ 0.1 % of a core with a million).
    static func runFar(count: Int, seconds: Int) throws -> (figures: [String: Double], keepAlive: AnyObject?) {
        let timers = try PreciseTimer()
        for _ in 0..<count { try timers.schedule(after: .seconds(86_400)) { _ in } }
        Measure.sleep(seconds: 0.5)
        let before = Measure.processCPU()
        Measure.sleep(seconds: Double(seconds))
        let cpu = Measure.processCPU() - before
        return (["cpu": Double(cpu), "seconds": Double(seconds)], timers)
    }
}
