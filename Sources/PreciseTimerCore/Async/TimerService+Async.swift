extension TimerService {
    /// The ticks of a repeating timer, for `for await`: see ``TickSequence``.
    ///
    /// ```swift
    /// for await tick in try timers.ticks(every: .milliseconds(10)) {
    ///     step(tick)
    /// }
    /// ```
    ///
    /// Each `for await` loop (each iterator) starts its own timer when it begins. The first tick
    /// comes **one interval** after that, not at once, unless `startingAfter` says otherwise
    /// (`.zero` for a tick as soon as possible). A consumer slower than the interval receives
    /// merged ticks (at most one waits), whose ``Tick/missed`` counts the periods they stand for.
    /// Leaving the loop cancels the timer; the loop ends when the task is cancelled or the
    /// service is shut down.
    ///
    /// - Parameters:
    ///   - interval: The period; at least ``TimerService/minimumInterval``.
    ///   - delay: Time from the start of the loop to the first tick, or `nil` for one interval.
    ///   - missedTicks: What the timer does after a late fire (see ``MissedTickPolicy``);
    ///     whatever it is, ticks the consumer could not take yet are merged.
    /// - Returns: A sequence that may be iterated any number of times, each iterator with its own
    ///   timer.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidInterval`` or
    ///   ``PreciseTimerError/Code/invalidDelay``; a shut-down service is not an error here (the
    ///   loop just ends at once).
    public func ticks(
        every interval: Duration, startingAfter delay: Duration? = nil, missedTicks: MissedTickPolicy = .skip
    ) throws(PreciseTimerError) -> TickSequence {
        _ = try interval.validatedInterval(for: nil)
        if let delay { _ = try delay.validatedDelay(for: nil) }
        return TickSequence(service: self, interval: interval, delay: delay, missedTicks: missedTicks)
    }
}
