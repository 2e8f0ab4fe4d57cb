/// A service that runs timers keyed by ``TimerID``. ``PreciseTimer`` (libevent) and
/// `DispatchReferenceTimer` (Dispatch) both conform, and so behave the same way for every rule
/// below; the adapters (weak target, `execTask`) are written once, on this protocol.
///
/// Rules every conformer keeps:
/// - A timer never fires before its deadline. Deadlines are absolute on ``MonotonicInstant``'s
///   clock; a repeating timer's deadlines are `start + k·interval`, so it does not drift.
/// - Timers due at the same instant fire in the order they were scheduled.
/// - A timer's handler never runs concurrently with itself.
/// - Bad input throws ``PreciseTimerError``; nothing traps, nothing is half-registered.
/// - The service owns a handler while its timer is scheduled and releases it as soon as the
///   timer ends (fired one-shot, cancel, cancelAll, shutdown).
public protocol TimerService: AnyObject, Sendable {
    /// Schedules a one-shot timer: it fires once after `delay`, then its ID is removed
    /// automatically (one-shot auto-cancel), so the handler may reuse it.
    ///
    /// - Parameters:
    ///   - id: The timer's name, or `nil` for a generated one that is never reused.
    ///   - delay: Time from now to the deadline; `.zero` fires as soon as possible.
    ///   - options: Executor (and missed-tick policy, ignored for one-shots).
    ///   - handler: Called once with the ``Tick``.
    /// - Returns: The timer's ID.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidDelay``,
    ///   ``PreciseTimerError/Code/emptyID``, ``PreciseTimerError/Code/duplicateID`` or
    ///   ``PreciseTimerError/Code/shutDown``; nothing is registered then.
    @discardableResult
    func schedule(
        id: TimerID?, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID

    /// Schedules a repeating timer at a fixed rate: deadlines are `start + k·interval`, so it
    /// does not drift; late fires are handled by `options.missedTicks`.
    ///
    /// - Parameters:
    ///   - id: The timer's name, or `nil` for a generated one that is never reused.
    ///   - interval: The period; must be greater than zero.
    ///   - delay: Time to the first fire, or `nil` for one interval.
    ///   - options: Executor and missed-tick policy.
    ///   - handler: Called at every fire until the timer is cancelled.
    /// - Returns: The timer's ID.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidInterval``,
    ///   ``PreciseTimerError/Code/invalidDelay``, ``PreciseTimerError/Code/emptyID``,
    ///   ``PreciseTimerError/Code/duplicateID`` or ``PreciseTimerError/Code/shutDown``.
    @discardableResult
    func scheduleRepeating(
        id: TimerID?, every interval: Duration, startingAfter delay: Duration?,
        options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID

    /// Cancels a timer.
    ///
    /// Idempotent; safe from any thread and from inside any handler, including the timer's own.
    /// After it returns, the handler never starts again (a call already running on another
    /// thread may finish), and the service has released the handler unless that call still
    /// runs, in which case it is released when the call returns.
    ///
    /// - Returns: `true` if a timer with this ID was scheduled.
    @discardableResult func cancel(_ id: TimerID) -> Bool

    /// Cancels every scheduled timer, with ``cancel(_:)``'s guarantees for each. The service
    /// stays usable.
    func cancelAll()

    /// Whether a timer with this ID is scheduled (a one-shot stops being scheduled when it fires).
    func isScheduled(_ id: TimerID) -> Bool

    /// The IDs of all scheduled timers, in no particular order.
    var scheduledIDs: [TimerID] { get }

    /// Cancels everything, stops the engine and releases every handler. Idempotent, and safe
    /// from inside a handler (it does not wait for the handler's own thread then).
    /// Afterwards `schedule` and `scheduleRepeating` throw ``PreciseTimerError/Code/shutDown``.
    func shutdown()
}

extension TimerService {
    /// Schedules a one-shot timer; see the protocol requirement. Defaults: a generated ID,
    /// default ``TimerOptions``.
    @discardableResult
    public func schedule(
        id: TimerID? = nil, after delay: Duration, options: TimerOptions = .init(),
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.schedule(id: id, after: delay, options: options, handler)
    }

    /// Schedules a repeating timer; see the protocol requirement. Defaults: a generated ID,
    /// first fire after one interval, default ``TimerOptions``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID? = nil, every interval: Duration,
        startingAfter delay: Duration? = nil, options: TimerOptions = .init(),
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleRepeating(id: id, every: interval, startingAfter: delay, options: options, handler)
    }
}
