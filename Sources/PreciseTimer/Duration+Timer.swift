extension Duration {
    /// Converts seconds read from a configuration file or a command line into a `Duration`,
    /// throwing instead of trapping on values no timer can use.
    ///
    /// `Duration.seconds(_: Double)` traps on NaN and on values too large for it; a daemon must
    /// not die on a bad config value, so convert with this before scheduling.
    ///
    /// - Parameter seconds: A finite, non-negative number of seconds, at most
    ///   ``PreciseTimer/maximumDuration``.
    /// - Returns: The duration, rounded up to the next nanosecond.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidDelay`` and the value.
    public static func checkedSeconds(_ seconds: Double) throws(PreciseTimerError) -> Duration {
        let limit = Double(PreciseTimer.maximumNanoseconds) / 1e9
        guard seconds.isFinite, seconds >= 0, seconds <= limit else {
            throw PreciseTimerError(.invalidDelay, value: "\(seconds) s")
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    /// Whole nanoseconds, rounded up (so a deadline is never early), or `nil` when the duration
    /// is negative or longer than ``PreciseTimer/maximumDuration``.
    package var timerNanoseconds: Int64? {
        let (seconds, attoseconds) = self.components
        guard seconds >= 0, attoseconds >= 0, seconds <= PreciseTimer.maximumNanoseconds / 1_000_000_000 else {
            return nil
        }
        let nanoseconds = seconds * 1_000_000_000 + (attoseconds + 999_999_999) / 1_000_000_000
        return nanoseconds <= PreciseTimer.maximumNanoseconds ? nanoseconds : nil
    }

    /// Validates a one-shot delay or a first-fire delay.
    package func validatedDelay(for id: TimerID?) throws(PreciseTimerError) -> Int64 {
        guard let nanoseconds = self.timerNanoseconds else {
            throw PreciseTimerError(.invalidDelay, id: id, value: "\(self)")
        }
        return nanoseconds
    }

    /// Validates a repeating interval: greater than zero and within range.
    package func validatedInterval(for id: TimerID?) throws(PreciseTimerError) -> Int64 {
        guard let nanoseconds = self.timerNanoseconds, nanoseconds > 0 else {
            throw PreciseTimerError(.invalidInterval, id: id, value: "\(self)")
        }
        return nanoseconds
    }
}

/// A timer request checked against the rules every service keeps: the first delay and the
/// interval in nanoseconds (interval 0 for a one-shot). Both implementations validate through it,
/// so they throw the same errors for the same input.
package struct TimerRequest: Sendable {
    package let firstDelay: Int64
    package let interval: Int64

    /// A one-shot after `delay`.
    package init(after delay: Duration, id: TimerID?) throws(PreciseTimerError) {
        self.firstDelay = try delay.validatedDelay(for: id)
        self.interval = 0
    }

    /// A repeating timer: first after `delay`, or after one interval when it is `nil`.
    package init(every interval: Duration, startingAfter delay: Duration?, id: TimerID?) throws(PreciseTimerError) {
        self.interval = try interval.validatedInterval(for: id)
        self.firstDelay =
            try delay.map { (delay) throws(PreciseTimerError) in try delay.validatedDelay(for: id) }
            ?? self.interval
    }
}
