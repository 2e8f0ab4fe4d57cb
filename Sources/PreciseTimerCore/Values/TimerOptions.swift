/// How one timer runs: on which executor, on which clock, and what it does about missed periods.
public struct TimerOptions: Sendable {
    /// Which clock an `after:` or `every:` timer counts on. Wall-clock timers
    /// (``TimerService/schedule(id:atWallClock:options:_:)``,
    /// ``TimerService/scheduleRepeating(id:on:options:_:)``) count on the wall clock whatever this says.
    public enum ClockKind: Sendable, Hashable {
        /// `CLOCK_MONOTONIC`, the default: stands still while the machine sleeps, so a 10-minute
        /// timer armed before a 6-hour suspend fires 10 minutes of awake time later (Swift's
        /// `SuspendingClock`).
        case suspending
        /// `CLOCK_BOOTTIME`: runs through suspend, so a deadline passed while asleep fires at
        /// resume, and a repeating timer counts the periods slept through as missed (Swift's
        /// `ContinuousClock` on Linux).
        case continuous
    }

    /// Where the handler runs. Default ``TimerExecutor/loop``.
    public var executor: TimerExecutor
    /// What a repeating timer does after a late fire. Default ``MissedTickPolicy/skip``;
    /// one-shot timers ignore it.
    public var missedTicks: MissedTickPolicy
    /// The clock an `after:` or `every:` timer counts on. Default ``ClockKind/suspending``.
    public var clock: ClockKind
    /// How late the timer may fire: never before its deadline, at most `tolerance` after it, so
    /// that one wake-up serves several timers. `.zero` (the default) fires at the deadline, and
    /// such a timer is never delayed by tolerant ones. A repeating timer keeps its grid
    /// (tolerance moves a call, never the schedule), and its tolerance is capped at half its
    /// interval, so no period is skipped for it. Negative or beyond
    /// ``TimerService/maximumDuration``: ``PreciseTimerError/Code/invalidDelay``.
    ///
    /// Timers coalesce on a grid: a timer with tolerance `t` fires at the first multiple of the
    /// largest power of two not above `t` (in nanoseconds) at or after its deadline, so timers of
    /// one tolerance whose deadlines fall in one cell of that grid share a wake-up.
    public var tolerance: Duration

    /// Creates options.
    /// - Parameters:
    ///   - executor: Where the handler runs.
    ///   - missedTicks: What a repeating timer does after a late fire.
    ///   - clock: The clock an `after:` or `every:` timer counts on.
    ///   - tolerance: How late the timer may fire (see ``tolerance``).
    public init(
        executor: TimerExecutor = .loop, missedTicks: MissedTickPolicy = .skip, clock: ClockKind = .suspending,
        // Not `.zero`: that is a call into the standard library in every caller, which builds
        // options per timer; `.nanoseconds(0)` is inlined to two zero words. The properties take
        // no initial values for the same reason (this init sets each).
        tolerance: Duration = .nanoseconds(0)
    ) {
        self.executor = executor
        self.missedTicks = missedTicks
        self.clock = clock
        self.tolerance = tolerance
    }
}
