import CLimit
import PreciseTimer

/// The peers section's rows that run in a child process of this executable: PreciseTimer and raw
/// libevent (C, `CLimit`'s `LibeventPeer.c`). Go and tokio run the same work in their own
/// programs (``PeerProgram``).
enum PeerBenchmark {
    /// One seed for every peer and round: the draws are the same everywhere, every time.
    static let seed: UInt64 = 22

    /// Schedule alone (fill), schedule + cancel pairs and touches on a `PreciseTimer`, the work of
    /// every peer (see ``PeerDraws``): `schedule(after:)` with a generated ID, `cancel(id)`,
    /// `reschedule(id, after:)`. The IDs live in one array allocated (and written) before the
    /// baseline, read at the victim's index in the loop, as each peer keeps its handles.
    /// - Returns: `fill`, `fillCpu` (per timer), `bytes` (RSS growth per pending timer), `wall`,
    ///   `cpu` (per pair), `touchWall`, `touchCpu` (per touch) and `check`.
    static func costPrecise(
        order: CancelOrder, pending: Int, pairs: Int, touches: Int
    ) throws -> (
        [String: Double], AnyObject
    ) {
        let draws = PeerDraws(order: order, pending: pending, pairs: pairs, touches: touches, seed: Self.seed)
        let timers = try PreciseTimer()
        let scale = TimerServiceScale(timers: timers)
        try scale.settle()
        var ids = [TimerID](repeating: TimerID("placeholder"), count: pending + pairs)
        var failures = 0

        let (rss0, cpu0, t0) = (Measure.residentBytes(), Measure.processCPU(), Measure.now())
        for index in 0..<pending {
            ids[index] = try timers.schedule(after: .milliseconds(draws.delaysMs[index])) { _ in }
        }
        let fillWall = Measure.now() - t0
        try scale.settle()
        let fillCPU = Measure.processCPU() - cpu0
        let bytes = Double(Measure.residentBytes() - rss0) / Double(pending)

        let (cpu1, t1) = (Measure.processCPU(), Measure.now())
        for k in 0..<pairs {
            ids[pending + k] = try timers.schedule(after: .milliseconds(draws.delaysMs[pending + k])) { _ in }
            if !timers.cancel(ids[Int(draws.victims[k])]) { failures += 1 }
        }
        let wall = Measure.now() - t1
        try scale.settle()
        let cpu = Measure.processCPU() - cpu1
        var figures: [String: Double] = [
            "fill": Double(fillWall) / Double(pending), "fillCpu": Double(fillCPU) / Double(pending),
            "bytes": bytes, "wall": Double(wall) / Double(pairs), "cpu": Double(cpu) / Double(pairs),
            "check": Double(draws.check),
        ]
        if touches > 0 {
            let (cpu2, t2) = (Measure.processCPU(), Measure.now())
            for index in draws.touched {
                let delay = Duration.milliseconds(draws.delaysMs[Int(index)]) + .seconds(3_600)
                if try !timers.reschedule(ids[Int(index)], after: delay) { failures += 1 }
            }
            let touchWall = Measure.now() - t2
            try scale.settle()
            figures["touchWall"] = Double(touchWall) / Double(touches)
            figures["touchCpu"] = Double(Measure.processCPU() - cpu2) / Double(touches)
        }
        guard failures == 0, timers.scheduledCount == pending else {
            throw BenchmarkSkip(reason: "\(failures) cancels or touches failed")
        }
        return (figures, timers)
    }

    /// Schedule + cancel pairs as ``costPrecise(order:pending:pairs:touches:)`` times them, by
    /// ``TimerHandle``: `scheduleTimer(.after(_:))` with a generated ID hands out the handle, and
    /// `cancel(handle)` ends exactly that timer (what a caller that keeps handles, as every peer
    /// keeps its own, pays). The same draws; no touch.
    /// - Returns: `wall`, `cpu` (per pair) and `check`.
    static func costPreciseByHandle(
        order: CancelOrder, pending: Int, pairs: Int
    ) throws -> (
        [String: Double], AnyObject
    ) {
        let draws = PeerDraws(order: order, pending: pending, pairs: pairs, touches: 0, seed: Self.seed)
        let timers = try PreciseTimer()
        let scale = TimerServiceScale(timers: timers)
        try scale.settle()
        var handles = [TimerHandle](repeating: TimerHandle(id: "placeholder", generation: 0), count: pending + pairs)
        var failures = 0
        for index in 0..<pending {
            handles[index] = try timers.scheduleTimer(
                .after(.milliseconds(draws.delaysMs[index])), id: nil, options: TimerOptions()
            ) { _ in }
        }
        try scale.settle()

        let (cpu1, t1) = (Measure.processCPU(), Measure.now())
        for k in 0..<pairs {
            handles[pending + k] = try timers.scheduleTimer(
                .after(.milliseconds(draws.delaysMs[pending + k])), id: nil, options: TimerOptions()
            ) { _ in }
            if !timers.cancel(handles[Int(draws.victims[k])]) { failures += 1 }
        }
        let wall = Measure.now() - t1
        try scale.settle()
        let cpu = Measure.processCPU() - cpu1
        guard failures == 0, timers.scheduledCount == pending else {
            throw BenchmarkSkip(reason: "\(failures) cancels by handle failed")
        }
        return (
            ["wall": Double(wall) / Double(pairs), "cpu": Double(cpu) / Double(pairs), "check": Double(draws.check)],
            timers
        )
    }

    /// The same work on raw libevent, in C (`clibevent_cost_run`), with these very draws.
    static func costLibevent(order: CancelOrder, pending: Int, pairs: Int, touches: Int) throws -> [String: Double] {
        let draws = PeerDraws(order: order, pending: pending, pairs: pairs, touches: touches, seed: Self.seed)
        var result = clibevent_cost_result()
        let status = draws.delaysMs.withUnsafeBufferPointer { delays in
            draws.victims.withUnsafeBufferPointer { victims in
                draws.touched.withUnsafeBufferPointer { touched in
                    clibevent_cost_run(
                        Int32(pending), Int32(pairs), delays.baseAddress!, victims.baseAddress!, Int32(touches),
                        touched.baseAddress, &result)
                }
            }
        }
        guard status == 0 else { throw BenchmarkSkip(reason: "a libevent call failed") }
        var figures: [String: Double] = [
            "fill": result.fill, "fillCpu": result.fill_cpu, "bytes": result.bytes, "wall": result.wall,
            "cpu": result.cpu, "check": Double(draws.check),
        ]
        if touches > 0 {
            figures["touchWall"] = result.touch_wall
            figures["touchCpu"] = result.touch_cpu
        }
        return figures
    }

    /// The touch floor (`climit_touch_floor`): the least a touch by string ID costs at `pending`
    /// timers, with the random order's draws (its touched IDs and delays).
    static func touchFloor(pending: Int, pairs: Int, touches: Int) throws -> [String: Double] {
        let draws = PeerDraws(order: .random, pending: pending, pairs: pairs, touches: touches, seed: Self.seed)
        var (wall, cpu) = (0.0, 0.0)
        let status = draws.delaysMs.withUnsafeBufferPointer { delays in
            draws.touched.withUnsafeBufferPointer { touched in
                climit_touch_floor(
                    Int32(pending), delays.baseAddress!, Int32(touches), touched.baseAddress!, &wall, &cpu)
            }
        }
        guard status == 0 else { throw BenchmarkSkip(reason: "the C touch floor failed") }
        return ["touchWall": wall, "touchCpu": cpu]
    }

    /// The by-handle floor (`climit_handle_floor`): PreciseTimer's registry design in C, schedule +
    /// cancel by handle with `order`'s draws (its delays and victims).
    /// - Returns: `<order>.handle.wall` and `<order>.handle.cpu` (per pair).
    static func handleFloor(order: CancelOrder, pending: Int, pairs: Int) throws -> [String: Double] {
        let draws = PeerDraws(order: order, pending: pending, pairs: pairs, touches: 0, seed: Self.seed)
        var (wall, cpu) = (0.0, 0.0)
        let status = draws.delaysMs.withUnsafeBufferPointer { delays in
            draws.victims.withUnsafeBufferPointer { victims in
                climit_handle_floor(
                    Int32(pending), Int32(pairs), delays.baseAddress!, victims.baseAddress!, &wall, &cpu)
            }
        }
        guard status == 0 else { throw BenchmarkSkip(reason: "the C by-handle floor failed") }
        let prefix = order.figurePrefix
        return ["\(prefix).handle.wall": wall, "\(prefix).handle.cpu": cpu]
    }

    /// The storm on raw libevent: `count` timers due at one instant, the loop on this thread.
    static func stormLibevent(count: Int) throws -> [String: Double] {
        var (first, last, overrun) = (0.0, 0.0, 0.0)
        guard clibevent_storm_run(Int32(count), &first, &last, &overrun) == 0 else {
            throw BenchmarkSkip(reason: "a libevent call failed")
        }
        return ["first": first, "last": last, "overrun": overrun]
    }

    /// One round of the 1 ms repeating timer on raw libevent, on this thread.
    static func latenessLibevent(interval: Int64, ticks: Int) -> Result<LatenessRun, BenchmarkSkip> {
        var samples = [Int64](repeating: 0, count: ticks)
        var cpu: Int64 = 0
        let status = samples.withUnsafeMutableBufferPointer {
            clibevent_lateness_run(interval, Int32(ticks), $0.baseAddress!, &cpu)
        }
        guard status == 0 else { return .failure(BenchmarkSkip(reason: "a libevent call failed")) }
        return .success(LatenessRun(samples: samples, cpu: cpu))
    }
}

extension LatenessRun {
    /// A round from raw samples (nanoseconds, a peer's) and its process CPU.
    init(samples: [Int64], cpu: Int64) {
        self.init()
        for sample in samples { self.record(lateness: sample) }
        self.drift = samples.last ?? 0
        self.cpu = cpu
    }
}
