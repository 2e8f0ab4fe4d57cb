/// A timer service on libevent: one `event_base` with `EVENT_BASE_FLAG_PRECISE_TIMER`
/// (timerfd, `CLOCK_MONOTONIC`), driven by one named thread it owns.
///
/// ```swift
/// let timers = try PreciseTimer()
/// try timers.scheduleRepeating(id: "heartbeat", every: .milliseconds(10)) { tick in
///     print(tick.count, tick.lateness)
/// }
/// ```
///
/// Deadlines are absolute; a repeating timer's are `start + k·interval` and never drift. The
/// service keeps its own deadline heap (ordered by deadline, then by scheduling order) and arms
/// one libevent timer at the earliest deadline, so scheduling and cancelling from any thread is
/// a lock and a heap operation, and the loop thread is woken (one `eventfd` write) only when a
/// new deadline is earlier than the one it sleeps until.
///
/// ## Fork safety
///
/// A child process created with `fork()` must not use a service created in the parent: the
/// child has only the thread that called `fork()`, so the loop thread does not exist there, and
/// the registry's semaphore may have been copied while held. In the child, create a new
/// `PreciseTimer` (or `exec`). Do not call ``shutdown()`` on the inherited one either: it would
/// wait for a thread that does not exist; leave it alone.
///
/// - Important: handlers on ``TimerExecutor/loop`` run on the service's thread and must not
///   block. Releasing the last reference shuts the service down (``shutdown()``).
public final class PreciseTimer: TimerService {
    /// The longest delay or interval a service accepts: 2^62 ns, about 146 years. Longer ones
    /// throw instead of wrapping around the clock.
    public static let maximumDuration: Duration = .nanoseconds(maximumNanoseconds)
    package static let maximumNanoseconds: Int64 = 1 << 62

    /// The configuration the service was created with.
    public let configuration: Configuration
    private let core: TimerCore
    private let engine: LibeventEngine

    /// Creates the service and starts its thread.
    ///
    /// - Parameter configuration: Thread name, precision and scheduling options.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidConfiguration`` for a
    ///   value out of range, ``PreciseTimerError/Code/systemFailure`` when the `eventfd` or the
    ///   thread cannot be created (out of file descriptors, `SCHED_FIFO` not permitted), or
    ///   ``PreciseTimerError/Code/libeventFailure`` when libevent cannot build its base.
    public init(configuration: Configuration = .init()) throws {
        try configuration.validate()
        let waker = try EventFDWaker()
        let core = TimerCore(loop: waker)
        self.configuration = configuration
        self.core = core
        self.engine = try LibeventEngine(core: core, waker: waker, configuration: configuration)
    }

    deinit {
        self.shutdown()
    }

    /// Schedules a one-shot timer. See ``TimerService/schedule(id:after:options:_:)``.
    @discardableResult
    public func schedule(
        id: TimerID?, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.core.schedule(id: id, after: delay, options: options, handler)
    }

    /// Schedules a repeating timer. See ``TimerService/scheduleRepeating(id:every:startingAfter:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID?, every interval: Duration, startingAfter delay: Duration?,
        options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.core.scheduleRepeating(id: id, every: interval, startingAfter: delay, options: options, handler)
    }

    /// Cancels a timer. See ``TimerService/cancel(_:)``.
    @discardableResult
    public func cancel(_ id: TimerID) -> Bool {
        self.core.cancel(id)
    }

    /// Cancels every timer. See ``TimerService/cancelAll()``.
    public func cancelAll() {
        self.core.cancelAll()
    }

    /// Whether a timer with this ID is scheduled.
    public func isScheduled(_ id: TimerID) -> Bool {
        self.core.isScheduled(id)
    }

    /// The IDs of all scheduled timers, in no particular order.
    public var scheduledIDs: [TimerID] {
        self.core.scheduledIDs
    }

    /// Cancels everything, releases every handler, stops the loop thread and frees libevent.
    ///
    /// Waits for the loop thread to exit, unless called on it (from a ``TimerExecutor/loop``
    /// handler): then it returns at once and the thread exits when the handler returns.
    /// Idempotent and safe to call from several threads at once.
    public func shutdown() {
        if self.core.shutdownRegistry() || !self.engine.isOnLoopThread {
            self.engine.stop()
        }
    }
}
