import PreciseTimer
import PreciseTimerReference

/// The services the scale probes measure, by the name passed to a child process.
enum ServiceKind: String, CaseIterable, Sendable {
    /// ``PreciseTimer`` with the default configuration.
    case precise
    /// `DispatchReferenceTimer`: the shared scheduling core on one `DispatchSourceTimer` alarm.
    case dispatch
    /// Raw Dispatch: one `DispatchSourceTimer` per timer (``GCDTimers``), the reference of every
    /// `×GCD` column.
    case gcd
    /// A one-thread SwiftNIO event loop (`scheduleTask`).
    case nio
    /// No timer service at all: the process's own background cost.
    case none
    /// Not a service: the cost section's limit row, the same schedule + cancel work in plain C
    /// (`CLimit`: open-addressing table and 4-ary heap), timed in C.
    case climit
    /// Not a service: the peers section's raw libevent 2.1 row (`CLimit`'s `LibeventPeer.c`: one
    /// `event_base` with `EVENT_BASE_FLAG_PRECISE_TIMER`, a `struct event` per timer).
    case libevent

    /// The kind every `×GCD` ratio divides by: idiomatic Dispatch.
    static let reference = ServiceKind.gcd

    /// The name shown in the table.
    var label: String {
        switch self {
        case .precise: "PreciseTimer"
        case .dispatch: "DispatchReferenceTimer"
        case .gcd: "GCD, a DispatchSourceTimer per timer"
        case .nio: "NIO scheduleTask"
        case .none: "no timer (process baseline)"
        case .climit: "C limit (open addressing + 4-ary heap)"
        case .libevent: "raw libevent 2.1 (C)"
        }
    }

    /// A new service of this kind.
    /// - Throws: ``BenchmarkSkip`` for kinds that are not a `TimerService`, or the service's error.
    func makeTimerService() throws -> any TimerService {
        switch self {
        case .precise: try PreciseTimer()
        case .dispatch: DispatchReferenceTimer()
        case .gcd, .nio, .none, .climit, .libevent:
            throw BenchmarkSkip(reason: "\(self.rawValue) is not a TimerService")
        }
    }

    /// A new service of this kind for the scale probes.
    /// - Throws: ``BenchmarkSkip`` for NIO, `none` and the C limit, or the service's error.
    func makeScaleService() throws -> any ScaleService {
        switch self {
        case .gcd: GCDTimers()
        default: TimerServiceScale(timers: try self.makeTimerService())
        }
    }
}
