extension Duration {
    /// The duration in whole nanoseconds, truncated toward zero; saturates at the bounds of `Int64`.
    ///
    /// The ticker works in nanoseconds, like `MonotonicInstant`, so its arithmetic is exact.
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, sumOverflow) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow || sumOverflow { return seconds < 0 ? .min : .max }
        return total
    }
}
