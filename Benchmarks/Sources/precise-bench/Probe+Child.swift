import Foundation

extension Probe {
    /// Runs the measurement in this (child) process, prints its ``ProbeResult`` as one line of
    /// JSON and exits at once, with the service still alive: tearing down a million timers is
    /// no part of any measurement.
    func runAndExit() throws -> Never {
        // The peers section's cost probes are started with a CPU to pin to; before any service is
        // made, so that its loop thread (idle in those rows) inherits the pin.
        try MeasuringCPU.pinFromEnvironment()
        let result: ProbeResult
        let keepAlive: AnyObject?
        switch self {
        case .cost(let kind, let order, let threads, let pending, let pairs):
            if kind == .nio {
                result = ProbeResult(figures: try CostBenchmark.runNIO(pending: pending, pairs: pairs, order: order))
                keepAlive = nil
            } else if kind == .climit {
                result = ProbeResult(
                    figures: try CostBenchmark.runCLimit(pending: pending, pairs: pairs, threads: threads, order: order)
                )
                keepAlive = nil
            } else {
                let timers = try kind.makeScaleService()
                result = ProbeResult(
                    figures: try CostBenchmark.run(
                        timers, pending: pending, pairs: pairs, threads: threads, order: order))
                keepAlive = timers.keepAlive
            }
        case .control(let kind, let pending, let countAt, let ops):
            let timers = try kind.makeTimerService()
            result = ProbeResult(
                figures: try ControlBenchmark.run(timers, pending: pending, countAt: countAt, ops: ops))
            keepAlive = timers
        case .memory(let kind, let count):
            let (figures, service) = try MemoryBenchmark.run(kind, count: count)
            (result, keepAlive) = (ProbeResult(figures: figures), service)
        case .storm(.libevent, let count):
            (result, keepAlive) = (ProbeResult(figures: try PeerBenchmark.stormLibevent(count: count)), nil)
        case .storm(let kind, let count):
            let (figures, service) = try StormBenchmark.run(kind, count: count)
            (result, keepAlive) = (ProbeResult(figures: figures), service)
        case .peerCost(.libevent, let order, let pending, let pairs, let touches):
            let figures = try PeerBenchmark.costLibevent(order: order, pending: pending, pairs: pairs, touches: touches)
            (result, keepAlive) = (ProbeResult(figures: figures), nil)
        case .peerCost(.climit, _, let pending, let pairs, let touches):
            // The C floors: the touch's, then the by-handle pair's in both orders.
            var figures = try PeerBenchmark.touchFloor(pending: pending, pairs: pairs, touches: touches)
            for order in CancelOrder.allCases {
                figures.merge(try PeerBenchmark.handleFloor(order: order, pending: pending, pairs: pairs)) { $1 }
            }
            (result, keepAlive) = (ProbeResult(figures: figures), nil)
        case .peerCost(let kind, let order, let pending, let pairs, let touches):
            guard kind == .precise else { throw BenchmarkSkip(reason: "no peers row for \(kind.rawValue)") }
            let (figures, service) = try PeerBenchmark.costPrecise(
                order: order, pending: pending, pairs: pairs, touches: touches)
            (result, keepAlive) = (ProbeResult(figures: figures), service)
        case .peerHandleCost(let order, let pending, let pairs):
            let (figures, service) = try PeerBenchmark.costPreciseByHandle(order: order, pending: pending, pairs: pairs)
            (result, keepAlive) = (ProbeResult(figures: figures), service)
        case .idle(let kind, let seconds):
            let (figures, service) = try IdleBenchmark.run(kind, seconds: seconds)
            (result, keepAlive) = (ProbeResult(figures: figures), service)
        case .idleFar(let count, let seconds):
            let (figures, service) = try IdleBenchmark.runFar(count: count, seconds: seconds)
            (result, keepAlive) = (ProbeResult(figures: figures), service)
        case .idleDaily(let seconds):
            let (figures, service) = try WallClockBenchmark.idleDaily(seconds: seconds)
            (result, keepAlive) = (ProbeResult(figures: figures), service)
        case .concurrent(let kind, let count, let milliseconds, let interval):
            let timers = try kind.makeScaleService()
            result = try ConcurrentBenchmark.run(
                timers, count: count, seconds: Double(milliseconds) / 1_000, interval: interval)
            keepAlive = timers.keepAlive
        }
        let data = try JSONEncoder().encode(result)
        FileHandle.standardOutput.write(data)
        withExtendedLifetime(keepAlive) {}
        exit(0)
    }
}
