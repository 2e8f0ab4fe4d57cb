/// How one timer runs: on which executor, and what it does about missed periods.
public struct TimerOptions: Sendable {
    /// Where the handler runs. Default ``TimerExecutor/loop``.
    public var executor: TimerExecutor = .loop
    /// What a repeating timer does after a late fire. Default ``MissedTickPolicy/skip``;
    /// one-shot timers ignore it.
    public var missedTicks: MissedTickPolicy = .skip

    /// Creates options.
    /// - Parameters:
    ///   - executor: Where the handler runs.
    ///   - missedTicks: What a repeating timer does after a late fire.
    public init(executor: TimerExecutor = .loop, missedTicks: MissedTickPolicy = .skip) {
        self.executor = executor
        self.missedTicks = missedTicks
    }
}
