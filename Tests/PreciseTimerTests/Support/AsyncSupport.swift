import PreciseTimer
import PreciseTimerTesting
import Testing

/// How a sleep ended.
enum SleepOutcome: Sendable, Hashable, CustomStringConvertible {
    case returned, cancelled, shutDown
    case failed(String)

    init(_ body: () async throws -> Void) async {
        do {
            try await body()
            self = .returned
        } catch is CancellationError {
            self = .cancelled
        } catch let error as PreciseTimerError where error.code == .shutDown {
            self = .shutDown
        } catch {
            self = .failed("\(error)")
        }
    }

    var description: String {
        switch self {
        case .returned: "returned"
        case .cancelled: "cancelled"
        case .shutDown: "shutDown"
        case .failed(let error): "failed(\(error))"
        }
    }
}

/// How late a task may resume after its timer fired, on top of ``Bounds/lateness``: a resumption
/// waits for a thread of the cooperative pool, which the rest of the suite, running in parallel
/// on 2 shared cores, keeps busy (its synchronous tests run on those threads too). Under
/// ThreadSanitizer a resumption was seen to wait 5.9 s, then 20.6 s in CI; under AddressSanitizer
/// beside a build, a task created at the suite's start first ran after 120 s. Below every "never
/// at the deadline" deadline these tests use (600 s; a test's time limit, 5 minutes, catches a
/// sleep that does end at it).
let resumptionBound: Duration = .seconds(240)

/// Polls `condition` every millisecond; `true` if it held in time (``Polling/until(timeout:_:)``).
func eventually(timeout: Duration = .zero, _ condition: () -> Bool) async -> Bool {
    await Polling.until(timeout: timeout, condition)
}
