/// Lets at most `linesPerSecond` log lines through per second of the service's clock (fixed
/// one-second windows) and counts the others, so a storm of identical events (a 1 ms ticker
/// that misses a period at every fire) writes a bounded number of lines that say how many were
/// left out.
///
/// Its lock is its own (never the registry's), taken only on the rare paths that may log, and
/// never held while logging. A ``SemaphoreGuarded``, not a `Mutex`: ThreadSanitizer does not see
/// the futex a `Mutex` waits on.
package final class LogRateLimiter: Sendable {
    private struct State {
        var windowStart: Int64?
        var written = 0
        var suppressed = 0
    }

    private let state = SemaphoreGuarded(State())
    private let linesPerSecond: Int

    /// - Parameter linesPerSecond: The most lines let through in one second.
    package init(linesPerSecond: Int) {
        self.linesPerSecond = linesPerSecond
    }

    /// Whether a line may be written at `now` (nanoseconds on the service's clock).
    ///
    /// - Returns: `nil` to drop the line (it is counted), else how many lines were dropped since
    ///   the last one let through (the caller writes that number into this line).
    package func admit(at now: Int64) -> Int? {
        self.state.withLock { state in
            if let start = state.windowStart, now - start < 1_000_000_000 {
                guard state.written < self.linesPerSecond else {
                    state.suppressed += 1
                    return nil
                }
            } else {
                state.windowStart = now
                state.written = 0
            }
            state.written += 1
            defer { state.suppressed = 0 }
            return state.suppressed
        }
    }
}
