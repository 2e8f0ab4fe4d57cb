import PreciseTimer
import PreciseTimerReference

/// The services the scale probes measure, by the name passed to a child process.
enum ServiceKind: String, CaseIterable, Sendable {
    /// ``PreciseTimer`` with the default configuration.
    case precise
    /// `DispatchReferenceTimer` on its own private queue.
    case dispatch
    /// A one-thread SwiftNIO event loop (`scheduleTask`).
    case nio
    /// No timer service at all: the process's own background cost.
    case none

    /// The name shown in the table.
    var label: String {
        switch self {
        case .precise: "PreciseTimer"
        case .dispatch: "DispatchReferenceTimer"
        case .nio: "NIO scheduleTask"
        case .none: "no timer (process baseline)"
        }
    }

    /// A new service of this kind.
    /// - Throws: ``BenchmarkSkip`` for kinds that are not a `TimerService`, or the service's error.
    func makeTimerService() throws -> any TimerService {
        switch self {
        case .precise: try PreciseTimer()
        case .dispatch: DispatchReferenceTimer()
        case .nio, .none: throw BenchmarkSkip(reason: "\(self.rawValue) is not a TimerService")
        }
    }
}
