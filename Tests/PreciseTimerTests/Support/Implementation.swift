import PreciseTimer
import PreciseTimerReference

/// The two implementations every conformance test runs against.
enum Implementation: String, CaseIterable, CustomStringConvertible, Sendable {
    case libevent
    case dispatch

    var description: String { self.rawValue }

    func make() throws -> any TimerService {
        switch self {
        case .libevent: try PreciseTimer()
        case .dispatch: DispatchReferenceTimer()
        }
    }
}

/// Generous bounds for real-time assertions: a timer is never early, and on a loaded 2-core
/// machine it may still be late by a few hundred milliseconds. Precision is measured by the
/// benchmarks, not asserted here.
enum Bounds {
    static let lateness: Duration = .milliseconds(500)
    static let quiet: Duration = .milliseconds(60)
}
