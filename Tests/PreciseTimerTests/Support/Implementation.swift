import PreciseTimer
import PreciseTimerReference
import PreciseTimerTesting

/// The implementations the conformance tests run against.
enum Implementation: String, CaseIterable, CustomStringConvertible, Sendable {
    case libevent
    case dispatch
    /// `TestTimerService`: time moves only when told, so it runs the scenarios that need no time
    /// to pass (bad input, shutdown, registry queries).
    case virtual

    /// The services on real time: every conformance scenario runs on both.
    static var allCases: [Implementation] { [.libevent, .dispatch] }

    /// The real services and the virtual-time one, for scenarios in which no time passes.
    static let untimed: [Implementation] = [.libevent, .dispatch, .virtual]

    var description: String { self.rawValue }

    func make() throws -> any TimerService {
        switch self {
        case .libevent: try PreciseTimer()
        case .dispatch: DispatchReferenceTimer()
        case .virtual: TestTimerService()
        }
    }
}

/// Generous bounds for real-time assertions: a timer is never early, and on a loaded 2-core
/// machine it may still be late by a few hundred milliseconds. Precision is measured by the
/// benchmarks, not asserted here.
enum Bounds {
    /// How late a fire may be before a test calls it a bug (a wake-up that waited for something
    /// else to bring the loop round is late by far more). Under a sanitizer the whole suite runs
    /// 2-10x slower on two cores, and the loop thread may wait that long for a core.
    static let lateness: Duration = Sanitizers.anyIsActive ? .seconds(5) : .milliseconds(500)
    static let quiet: Duration = .milliseconds(60)
}

extension TimerService {
    /// The generation of the timer now under `id`, read from the service's core: tests check that
    /// a move keeps the same timer. Users keep the ``TimerHandle`` instead (reading it back is a
    /// race a one-shot's reuse of its ID can win), which is why the public spelling is deprecated.
    func coreGeneration(of id: TimerID) -> UInt64? {
        (self as? any TimerCoreService)?.core.generation(of: id)
    }
}
