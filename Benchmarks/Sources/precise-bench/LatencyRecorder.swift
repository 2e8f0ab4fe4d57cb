import Dispatch
import Synchronization

/// Collects the lateness of one timer's calls from whatever thread runs its handler, and tells
/// the waiting benchmark when it has enough.
final class LatencyRecorder: Sendable {
    private struct State {
        var run = LatenessRun()
        /// Periods elapsed so far on the ideal grid (calls plus skipped periods).
        var periods: Int64 = 0
        var lastFired: Int64 = 0
    }

    /// Calls to collect before ``waitUntilDone(timeoutSeconds:)`` returns.
    let target: Int
    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    /// Creates a recorder that is done after `target` calls.
    init(target: Int) {
        self.target = target
    }

    /// Records one call.
    ///
    /// - Parameters:
    ///   - lateness: Fresh clock read minus the call's deadline, in nanoseconds.
    ///   - firedAt: The fresh clock read, for the drift.
    ///   - missed: Periods skipped just before this call.
    /// - Returns: `true` for the `target`-th call, after which the caller stops the timer.
    @discardableResult
    func record(lateness: Int64, firedAt: Int64, missed: UInt64 = 0) -> Bool {
        let finished = self.state.withLock { state in
            guard state.run.calls < self.target else { return false }
            state.run.record(lateness: lateness)
            state.run.missed += missed
            state.periods += 1 + Int64(missed)
            state.lastFired = firedAt
            return state.run.calls == self.target
        }
        if finished { self.done.signal() }
        return finished
    }

    /// Records one call of a timer on the grid `first + k·interval` that this benchmark chose and
    /// that reports the periods it skipped: the call answers period `k = calls + missed so far`,
    /// and its lateness is measured against `first + k·interval`, never against the deadline the
    /// service reports (`Tick.scheduledAt`), so a service that drifts cannot look punctual.
    ///
    /// - Returns: `true` for the `target`-th call, after which the caller stops the timer.
    @discardableResult
    func record(firedAt: Int64, missed: UInt64, first: Int64, interval: Int64) -> Bool {
        let finished = self.state.withLock { state in
            guard state.run.calls < self.target else { return false }
            let period = state.periods + Int64(missed)
            state.run.record(lateness: firedAt - (first + period * interval))
            state.run.missed += missed
            state.periods = period + 1
            state.lastFired = firedAt
            return state.run.calls == self.target
        }
        if finished { self.done.signal() }
        return finished
    }

    /// Records one call of a timer that does not report its deadlines (Foundation's `Timer`, a raw `DispatchSourceTimer`):
    /// the deadline is taken as the latest grid point `first + k·interval` at or before
    /// `firedAt`, and grid points jumped over since the previous call count as missed.
    ///
    /// - Returns: `true` for the `target`-th call.
    @discardableResult
    func recordOnGrid(firedAt: Int64, first: Int64, interval: Int64) -> Bool {
        let finished = self.state.withLock { state in
            guard state.run.calls < self.target else { return false }
            let k = max((firedAt - first) / interval, 0)
            let missed = max(k - state.periods, 0)
            state.run.record(lateness: firedAt - (first + k * interval))
            state.run.missed += UInt64(missed)
            // The grid point answered, not a count of calls: a timer that calls twice in one period
            // (a missed period delivered late) must not push the drift a period early.
            state.periods = k + 1
            state.lastFired = firedAt
            return state.run.calls == self.target
        }
        if finished { self.done.signal() }
        return finished
    }

    /// Blocks the calling (non-concurrency) thread until done or until `timeoutSeconds` passed.
    /// - Returns: `false` on timeout.
    func waitUntilDone(timeoutSeconds: Double) -> Bool {
        self.done.wait(timeout: .now() + timeoutSeconds) == .success
    }

    /// The run so far, with its drift against the grid `start + k·interval`.
    func run(start: Int64, interval: Int64) -> LatenessRun {
        self.state.withLock { state in
            var run = state.run
            run.drift = state.lastFired - (start + state.periods * interval)
            return run
        }
    }
}
