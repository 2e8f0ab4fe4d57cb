/// One scale measurement run in a fresh child process (`precise-bench --probe <encoded>`), so
/// that no measurement inherits another's heap, threads or leftover work.
enum Probe: Sendable, Equatable {
    /// Schedule + cancel pairs with `pending` timers pending (``CostBenchmark``).
    case cost(ServiceKind, CancelOrder, threads: Int, pending: Int, pairs: Int)
    /// RSS growth per pending timer (``MemoryBenchmark``).
    case memory(ServiceKind, count: Int)
    /// One-shots due at one instant (``StormBenchmark``).
    case storm(ServiceKind, count: Int)
    /// Process CPU while one 1 s timer idles (``IdleBenchmark``).
    case idle(ServiceKind, seconds: Int)
    /// reschedule vs cancel + schedule, counts and worst single calls (``ControlBenchmark``).
    case control(ServiceKind, pending: Int, countAt: Int, ops: Int)
    /// Process CPU while `count` timers a day away are pending on a `PreciseTimer`
    /// (``IdleBenchmark/runFar(count:seconds:)``).
    case idleFar(count: Int, seconds: Int)
    /// Process CPU while one daily wall-clock timer is pending on a `PreciseTimer`
    /// (``WallClockBenchmark/idleDaily(seconds:)``).
    case idleDaily(seconds: Int)
    /// The peers section's schedule-alone, schedule + cancel and touch run on PreciseTimer or raw
    /// libevent (``PeerBenchmark``).
    case peerCost(ServiceKind, CancelOrder, pending: Int, pairs: Int, touches: Int)
    /// The peers section's schedule + cancel run on PreciseTimer by ``TimerHandle``
    /// (``PeerBenchmark/costPreciseByHandle(order:pending:pairs:)``).
    case peerHandleCost(CancelOrder, pending: Int, pairs: Int)
    /// Many concurrent periodic timers (``ConcurrentBenchmark``).
    case concurrent(ServiceKind, count: Int, milliseconds: Int, interval: Int64)

    /// The command-line form: fields joined by `:`.
    var encoded: String {
        switch self {
        case .cost(let kind, let order, let threads, let pending, let pairs):
            "cost:\(kind.rawValue):\(order.rawValue):\(threads):\(pending):\(pairs)"
        case .control(let kind, let pending, let countAt, let ops):
            "control:\(kind.rawValue):\(pending):\(countAt):\(ops)"
        case .peerCost(let kind, let order, let pending, let pairs, let touches):
            "peerCost:\(kind.rawValue):\(order.rawValue):\(pending):\(pairs):\(touches)"
        case .peerHandleCost(let order, let pending, let pairs):
            "peerHandleCost:\(ServiceKind.precise.rawValue):\(order.rawValue):\(pending):\(pairs)"
        case .memory(let kind, let count): "memory:\(kind.rawValue):\(count)"
        case .storm(let kind, let count): "storm:\(kind.rawValue):\(count)"
        case .idle(let kind, let seconds): "idle:\(kind.rawValue):\(seconds)"
        case .idleDaily(let seconds): "idleDaily:\(ServiceKind.precise.rawValue):\(seconds)"
        case .idleFar(let count, let seconds): "idleFar:\(ServiceKind.precise.rawValue):\(count):\(seconds)"
        case .concurrent(let kind, let count, let milliseconds, let interval):
            "concurrent:\(kind.rawValue):\(count):\(milliseconds):\(interval)"
        }
    }

    /// Parses ``encoded``.
    /// - Throws: ``BenchmarkSkip`` when the text is not a probe.
    init(encoded: String) throws {
        let fields = encoded.split(separator: ":").map(String.init)
        let bad = BenchmarkSkip(reason: "not a probe: \(encoded)")
        guard fields.count >= 3, let kind = ServiceKind(rawValue: fields[1]) else { throw bad }
        let numbers = fields.dropFirst(2).map { Int($0) }
        switch (fields[0], fields.count) {
        case ("cost", 6):
            guard let order = CancelOrder(rawValue: fields[2]), let threads = numbers[1], let pending = numbers[2],
                let pairs = numbers[3]
            else { throw bad }
            self = .cost(kind, order, threads: threads, pending: pending, pairs: pairs)
        case ("control", 5):
            guard let pending = numbers[0], let countAt = numbers[1], let ops = numbers[2] else { throw bad }
            self = .control(kind, pending: pending, countAt: countAt, ops: ops)
        case ("peerCost", 6):
            guard let order = CancelOrder(rawValue: fields[2]), let pending = numbers[1], let pairs = numbers[2],
                let touches = numbers[3]
            else { throw bad }
            self = .peerCost(kind, order, pending: pending, pairs: pairs, touches: touches)
        case ("peerHandleCost", 5):
            guard kind == .precise, let order = CancelOrder(rawValue: fields[2]), let pending = numbers[1],
                let pairs = numbers[2]
            else { throw bad }
            self = .peerHandleCost(order, pending: pending, pairs: pairs)
        case ("memory", 3):
            guard let count = numbers[0] else { throw bad }
            self = .memory(kind, count: count)
        case ("storm", 3):
            guard let count = numbers[0] else { throw bad }
            self = .storm(kind, count: count)
        case ("idle", 3):
            guard let seconds = numbers[0] else { throw bad }
            self = .idle(kind, seconds: seconds)
        case ("idleFar", 4):
            guard let count = numbers[0], let seconds = numbers[1] else { throw bad }
            self = .idleFar(count: count, seconds: seconds)
        case ("idleDaily", 3):
            guard let seconds = numbers[0] else { throw bad }
            self = .idleDaily(seconds: seconds)
        case ("concurrent", 5):
            guard let count = numbers[0], let milliseconds = numbers[1], let interval = numbers[2] else { throw bad }
            self = .concurrent(kind, count: count, milliseconds: milliseconds, interval: Int64(interval))
        default:
            throw bad
        }
    }
}
