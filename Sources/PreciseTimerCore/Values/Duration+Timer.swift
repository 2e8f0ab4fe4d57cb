extension Duration {
    /// Converts seconds read from a configuration file or a command line into a `Duration`,
    /// throwing instead of trapping on values no timer can use.
    ///
    /// `Duration.seconds(_: Double)` traps on NaN and on values too large for it; a daemon must
    /// not die on a bad config value, so convert with this before scheduling.
    ///
    /// - Parameter seconds: A finite, non-negative number of seconds, at most
    ///   ``TimerService/maximumDuration``.
    /// - Returns: The duration, rounded up to the next nanosecond.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidDelay`` and the value.
    public static func checkedSeconds(_ seconds: Double) throws(PreciseTimerError) -> Duration {
        let limit = Double(TimerLimits.maximumNanoseconds) / 1e9
        guard seconds.isFinite, seconds >= 0, seconds <= limit else {
            throw PreciseTimerError(.invalidDelay, value: "\(seconds) s")
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    /// Whole nanoseconds, rounded up (so a deadline is never early), or `nil` when the duration
    /// is negative or longer than ``TimerService/maximumDuration``.
    package var timerNanoseconds: Int64? {
        // The attoseconds as two 64-bit halves, divided by 10⁹ without a hardware division:
        // `components` would divide the 128-bit value by 10¹⁸ in a library call on every schedule
        // and touch (and it traps past `Int64.max` seconds), and a 128-by-64-bit `div` takes
        // tens of cycles. With 2⁶⁴ = 10⁹·q + r, `high·2⁶⁴ + low` is `10⁹·(high·q)` plus
        // `high·r + low`, below 2⁶⁵ (the high half is below 10⁹): a carry out of that sum is one
        // more 2⁶⁴, the rest a 64-bit division by a constant, which the compiler multiplies.
        let attoseconds = self.attoseconds
        let high = Int64(truncatingIfNeeded: attoseconds >> 64)
        guard high >= 0, high < 1_000_000_000 else { return nil }
        let q: UInt64 = 18_446_744_073  // 2⁶⁴ / 10⁹
        let r: UInt64 = 709_551_616  // 2⁶⁴ % 10⁹
        let (sum, carry) = UInt64(truncatingIfNeeded: attoseconds).addingReportingOverflow(UInt64(high) &* r)
        var rest = sum
        var quotient = UInt64(high) &* q  // Below 10⁹·q < 2⁶⁴.
        if carry {
            quotient &+= q
            rest &+= r  // The sum wrapped: what is left is below high·r, far from overflowing.
        }
        quotient &+= rest / 1_000_000_000
        let remainder = rest % 1_000_000_000
        let limit = UInt64(TimerLimits.maximumNanoseconds)
        guard quotient < limit || (quotient == limit && remainder == 0) else { return nil }
        return Int64(quotient) + (remainder != 0 ? 1 : 0)
    }

    /// Validates a one-shot delay or a first-fire delay.
    package func validatedDelay(for id: TimerID?) throws(PreciseTimerError) -> Int64 {
        guard let nanoseconds = self.timerNanoseconds else {
            throw PreciseTimerError(.invalidDelay, id: id, value: "\(self)")
        }
        return nanoseconds
    }

    /// Validates a repeating interval: at least ``TimerService/minimumInterval`` and within range.
    package func validatedInterval(for id: TimerID?) throws(PreciseTimerError) -> Int64 {
        guard let nanoseconds = self.timerNanoseconds, nanoseconds >= TimerLimits.minimumIntervalNanoseconds else {
            throw PreciseTimerError(.invalidInterval, id: id, value: "\(self)")
        }
        return nanoseconds
    }
}
