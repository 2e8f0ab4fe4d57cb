import Histogram
import Synchronization

/// Collects the lateness of many timers' calls, but only those that start inside a window the
/// benchmark opens and closes (so that scheduling thousands of timers is not measured).
final class WindowRecorder: Sendable {
    private struct State {
        var run = LatenessRun()
        var isOpen = false
    }

    private let state = Mutex(State())

    /// Creates a closed recorder.
    init() {}

    /// Starts recording.
    func open() {
        self.state.withLock { $0.isOpen = true }
    }

    /// Stops recording.
    /// - Returns: What was recorded while open.
    func close() -> LatenessRun {
        self.state.withLock { state in
            state.isOpen = false
            return state.run
        }
    }

    /// Records one call if the window is open.
    /// - Parameters:
    ///   - lateness: Fresh clock read minus the call's deadline, in nanoseconds.
    ///   - missed: Periods skipped just before this call.
    func record(lateness: Int64, missed: UInt64) {
        self.state.withLock { state in
            guard state.isOpen else { return }
            state.run.record(lateness: lateness)
            state.run.missed += missed
        }
    }
}
