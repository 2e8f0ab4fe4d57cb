/// A service that runs timers keyed by ``TimerID``. `PreciseTimer` (libevent) and
/// `DispatchReferenceTimer` (Dispatch) both conform, and so behave the same way for every rule
/// below; the adapters (weak target, `execTask`, tokens, ``TimerClock``, ``TickSequence``) are
/// written once, on this protocol.
///
/// Rules every conformer keeps:
/// - A timer never fires before its deadline. Deadlines are absolute on ``MonotonicInstant``'s
///   clock; a repeating timer's deadlines are `start + k·interval`, so it does not drift.
/// - Timers due at the same instant fire in the order they were scheduled; a repeating timer
///   keeps its place at every re-arm, reschedule and resume.
/// - A timer's handler never runs concurrently with itself.
/// - Bad input throws ``PreciseTimerError``; nothing traps, nothing is half-registered.
/// - The service owns a handler while its timer is scheduled and releases it as soon as the
///   timer ends (fired one-shot, cancel, cancelAll, shutdown).
/// - **Cancel guarantee**: once ``cancel(_:)-(TimerID)`` (or ``pause(_:)``, ``reschedule(_:after:)``,
///   ``cancelAll()``, ``shutdown()``) returns, no call that the old state allowed *begins*; a call
///   that had already begun (its handler running on another thread) may still finish.
///
/// The services of this package share one implementation of the requirements. A conformer of
/// your own (a forwarding or recording wrapper) writes every requirement out: the scheduling
/// calls (``schedule(id:after:options:_:)`` and the others) and the overloads with default
/// arguments are written once on ``scheduleTimer(_:id:options:_:)``, with signatures no
/// requirement has, so a conformer that forgets a requirement does not compile.
public protocol TimerService: AnyObject, Sendable {
    /// The service's current time, on the clock its deadlines live on (`CLOCK_MONOTONIC` for the
    /// real services; the virtual time of a test service).
    var now: MonotonicInstant { get }

    /// The wall clock's current time (`CLOCK_REALTIME` for the real services; the virtual wall
    /// clock of a test service): what wall-clock timers (``TimerTrigger/atWallClock(_:)``,
    /// ``TimerTrigger/on(_:)``) are measured against.
    var wallClockNow: WallClockInstant { get }

    /// Schedules a timer and returns its identity: the ID and the generation that only this timer
    /// of this service ever has. The one scheduling requirement: ``schedule(id:after:options:_:)``
    /// and the other scheduling calls are written on it, and every adapter keeps the handle it
    /// returns (see ``TimerHandle``).
    ///
    /// A one-shot fires once, then its ID is removed automatically (one-shot auto-cancel), so the
    /// handler may reuse it. A repeating timer fires at a fixed rate, `first + k·interval`, so it
    /// does not drift; late fires are handled by `options.missedTicks`.
    ///
    /// - Parameters:
    ///   - trigger: When it fires (``TimerTrigger``).
    ///   - id: The timer's name, or `nil` for a generated one that is never reused.
    ///   - options: Executor and missed-tick policy (ignored for one-shots).
    ///   - handler: Called at every fire with the ``Tick``.
    /// - Returns: The timer's ``TimerHandle``.
    /// - Throws: ``PreciseTimerError`` with ``PreciseTimerError/Code/invalidDelay`` (a delay or
    ///   deadline out of range), ``PreciseTimerError/Code/invalidInterval``,
    ///   ``PreciseTimerError/Code/emptyID``, ``PreciseTimerError/Code/reservedID``,
    ///   ``PreciseTimerError/Code/duplicateID`` or ``PreciseTimerError/Code/shutDown``; nothing is
    ///   registered then.
    @discardableResult
    func scheduleTimer(
        _ trigger: TimerTrigger, id: TimerID?, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerHandle

    /// Moves a scheduled timer's next deadline to now + `delay`, keeping its ID, handler,
    /// options, ``Tick/count`` and its place among equal deadlines. A repeating timer's grid
    /// restarts there (next deadlines `now + delay + k·interval`).
    ///
    /// The idle-timeout primitive: one lock and one heap move, cheaper than `cancel` + `schedule`,
    /// and race-free: once it returns, no call for the old deadline begins (a one-shot whose fire
    /// was waiting for its queue is moved and that fire dropped). A repeating timer whose handler
    /// is running gets the new deadline when the call returns. A paused timer stays paused with
    /// `delay` as its remaining time.
    ///
    /// - Returns: `false` (nothing changed) when no timer has this ID, or when it is a one-shot
    ///   whose call has already begun.
    /// - Throws: ``PreciseTimerError/Code/invalidDelay`` for a bad `delay`; nothing changes then.
    @discardableResult
    func reschedule(_ id: TimerID, after delay: Duration) throws -> Bool

    /// ``reschedule(_:after:)`` to an absolute deadline; a deadline in the past fires as soon as
    /// possible.
    @discardableResult
    func reschedule(_ id: TimerID, at deadline: MonotonicInstant) throws -> Bool

    /// Pushes the pending timer under `id` to now + `delay`, or, when none is pending (or its
    /// call has begun), schedules a one-shot with `handler` there: the idle-timeout primitive for
    /// sessions created on demand, in one atomic step. Two first touches of one ID never race to
    /// ``PreciseTimerError/Code/duplicateID``, and a touch that comes while an expiry's call has
    /// begun schedules a new timer instead of losing to it. An existing repeating timer is moved as
    /// ``reschedule(_:after:)`` moves it (its grid restarts there), a paused one keeps `delay` as its
    /// remaining time; `handler` and `options` are used only when a timer is created.
    ///
    /// - Returns: `true` when a new timer was created, `false` when a pending one was moved.
    /// - Throws: ``PreciseTimerError/Code/emptyID``, ``PreciseTimerError/Code/invalidDelay``,
    ///   ``PreciseTimerError/Code/reservedID`` (creating under a generated name) or
    ///   ``PreciseTimerError/Code/shutDown``; nothing changes then.
    @discardableResult
    func scheduleOrReschedule(
        id: TimerID, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Bool

    /// The next deadline of the timer under `id`, on the service's clock (``now``): `nil` when no
    /// timer has the ID, when it is paused, or when it is a one-shot whose call has begun. While
    /// a repeating timer's handler runs, the deadline it is re-armed at if the call returns in
    /// time. O(1): one look-up, no copy of the registry.
    func deadline(of id: TimerID) -> MonotonicInstant?

    /// The next occurrence of the wall-clock timer under `id`, on the wall clock: the instant a
    /// ``schedule(id:atWallClock:options:_:)`` one-shot waits for, or the next occurrence of a
    /// ``scheduleRepeating(id:on:options:_:)`` calendar timer. `nil` when no timer has the ID,
    /// when it is not on the wall clock, when it is paused, and while a calendar timer's next
    /// occurrence is not known yet (its handler is running, or a `reschedule` or `resume` moved it
    /// and the service has not asked its schedule again). The default implementation returns
    /// `nil`, so conformers written before it keep compiling.
    func wallClockDeadline(of id: TimerID) -> WallClockInstant?

    /// Pauses a timer: it stays scheduled (``isScheduled(_:)`` stays `true`) and never fires
    /// until ``resume(_:)``. Once it returns, no call begins (a call already running may finish).
    /// Idempotent; safe from any thread and from handlers.
    ///
    /// - Returns: Whether a timer with this ID exists.
    @discardableResult func pause(_ id: TimerID) -> Bool

    /// Resumes a paused timer with the time it had left: next deadline = now + (deadline − pause
    /// instant). A repeating timer runs at its fixed rate from there; no missed periods are
    /// reported for the paused span. Idempotent: resuming a timer that is not paused changes
    /// nothing and returns `false`.
    ///
    /// - Returns: `true` if a timer with this ID was paused and now runs; `false` when there is
    ///   no such timer or it was not paused.
    @discardableResult func resume(_ id: TimerID) -> Bool

    /// Whether the timer with this ID exists and is paused.
    func isPaused(_ id: TimerID) -> Bool

    /// Cancels a timer.
    ///
    /// Idempotent; safe from any thread and from inside any handler, including the timer's own.
    /// After it returns, no call of the handler *begins*; a call that had already begun on
    /// another thread may finish. The service has then released the handler, unless that call
    /// still runs, in which case it is released when the call returns.
    ///
    /// - Returns: `true` if a timer with this ID was scheduled.
    @discardableResult func cancel(_ id: TimerID) -> Bool

    /// Cancels exactly the timer `handle` names (the one ``scheduleTimer(_:id:options:_:)``
    /// returned, or a tick's ``Tick/handle``): after an explicit ID was cancelled and reused, a
    /// stale handle never ends the newer timer. Same guarantees as ``cancel(_:)-(TimerID)``.
    ///
    /// - Returns: `true` if that very timer was scheduled and is now cancelled.
    @discardableResult func cancel(_ handle: TimerHandle) -> Bool

    /// The generation of the timer now scheduled under `id`, or `nil` when there is none.
    /// Every timer a service schedules gets a generation never used before by that service.
    @available(
        *, deprecated,
        message:
            "Keep the TimerHandle that scheduleTimer returns (or a tick's handle): read back, the generation may already be a newer timer's"
    )
    func generation(of id: TimerID) -> UInt64?

    /// Cancels every scheduled timer, with ``cancel(_:)-(TimerID)``'s guarantees for each. The service
    /// stays usable.
    func cancelAll()

    /// Whether a timer with this ID is scheduled (a one-shot stops being scheduled when its call
    /// begins). Paused timers are scheduled.
    func isScheduled(_ id: TimerID) -> Bool

    /// The IDs of all scheduled timers, in no particular order. Copies every ID: use
    /// ``scheduledCount`` for the number.
    var scheduledIDs: [TimerID] { get }

    /// The number of scheduled timers (paused ones included), in O(1): however many timers there
    /// are, the count costs a lock per registry shard (64), no timer is read.
    var scheduledCount: Int { get }

    /// Cancels everything, stops the engine and releases every handler. Idempotent, and safe
    /// from inside a handler (it does not wait for the handler's own thread then).
    /// Afterwards every call that schedules throws ``PreciseTimerError/Code/shutDown``, and the
    /// others are no-ops returning `false`, `nil` or empty.
    ///
    /// The handlers are released on the calling thread.
    func shutdown()
}
