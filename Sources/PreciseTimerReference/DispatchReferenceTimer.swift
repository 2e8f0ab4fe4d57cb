import Dispatch
import PreciseTimer

/// The ``TimerService`` API on Dispatch: the reference the libevent engine is measured and tested
/// against.
///
/// It runs the same scheduling core as `PreciseTimer` (the semaphore-guarded registry and
/// deadline heap, so the same ordering, missed-tick policies, errors and cancel guarantee) on
/// Dispatch's engine instead of libevent's: one `DispatchSourceTimer`, armed at the earliest
/// deadline, on one serial queue. The conformance suite runs every scenario against both, so
/// what it compares is the engine: wake-up precision, threads, queue hops and shutdown.
///
/// ```swift
/// let timers = DispatchReferenceTimer()
/// try timers.scheduleRepeating(id: "tick", every: .milliseconds(1)) { tick in … }
/// ```
///
/// Why not one `DispatchSourceTimer` per timer, the classic GCD wrapper? That is what this type
/// was until version 2: it cannot order timers due at the same instant (Dispatch does not),
/// pausing a repeating source needs `suspend`/`resume` pairs that trap when unbalanced (the
/// "over-resume" crash fixed in issue 10), and every timer costs a kernel-visible source. The
/// benchmark still measures raw per-timer sources as their own contestant.
///
/// - Important: handlers on ``TimerExecutor/loop`` run on the service's serial queue and must not
///   block it.
///
/// ## Fork safety
///
/// libdispatch does not survive `fork()`: in a child process, a `DispatchReferenceTimer` (one
/// inherited from the parent, or one created in the child after the parent used Dispatch)
/// never fires. Create timers in the child only after `exec`, or use `PreciseTimer`, which
/// refuses to run in a process other than the one that created it.
public final class DispatchReferenceTimer: TimerService {
    private let core: TimerCore
    private let alarm: DispatchAlarm

    /// Creates the service.
    /// - Parameter queue: The queue the alarm and ``TimerExecutor/loop`` handlers run on: a
    ///   serial queue of its own that targets `queue` (so a concurrent queue given here never
    ///   runs two ``TimerExecutor/loop`` handlers at once).
    public init(queue: DispatchQueue? = nil) {
        let alarm = DispatchAlarm(queue: DispatchQueue(label: "DispatchReferenceTimer", target: queue))
        self.alarm = alarm
        self.core = TimerCore(doorbell: alarm)
        alarm.start(driving: self.core)
    }

    deinit {
        self.shutdown()
    }

    /// The current time on `CLOCK_MONOTONIC`.
    public var now: MonotonicInstant { self.core.now }

    /// See ``TimerService/schedule(id:after:options:_:)``.
    @discardableResult
    public func schedule(
        id: TimerID?, after delay: Duration, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.core.schedule(id: id, after: delay, options: options, handler)
    }

    /// See ``TimerService/schedule(id:at:options:_:)``.
    @discardableResult
    public func schedule(
        id: TimerID?, at deadline: MonotonicInstant, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.core.schedule(id: id, at: deadline, options: options, handler)
    }

    /// See ``TimerService/scheduleRepeating(id:every:startingAfter:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID?, every interval: Duration, startingAfter delay: Duration?,
        options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.core.scheduleRepeating(id: id, every: interval, startingAfter: delay, options: options, handler)
    }

    /// See ``TimerService/scheduleRepeating(id:every:startingAt:options:_:)``.
    @discardableResult
    public func scheduleRepeating(
        id: TimerID?, every interval: Duration, startingAt start: MonotonicInstant,
        options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> TimerID {
        try self.core.scheduleRepeating(id: id, every: interval, startingAt: start, options: options, handler)
    }

    /// See ``TimerService/reschedule(_:after:)``.
    @discardableResult
    public func reschedule(_ id: TimerID, after delay: Duration) throws -> Bool {
        try self.core.reschedule(id, after: delay)
    }

    /// See ``TimerService/reschedule(_:at:)``.
    @discardableResult
    public func reschedule(_ id: TimerID, at deadline: MonotonicInstant) throws -> Bool {
        try self.core.reschedule(id, at: deadline)
    }

    /// See ``TimerService/pause(_:)``.
    @discardableResult
    public func pause(_ id: TimerID) -> Bool { self.core.pause(id) }

    /// See ``TimerService/resume(_:)``.
    @discardableResult
    public func resume(_ id: TimerID) -> Bool { self.core.resume(id) }

    /// See ``TimerService/isPaused(_:)``.
    public func isPaused(_ id: TimerID) -> Bool { self.core.isPaused(id) }

    /// See ``TimerService/cancel(_:)``.
    @discardableResult
    public func cancel(_ id: TimerID) -> Bool { self.core.cancel(id) }

    /// See ``TimerService/cancel(_:generation:)``.
    @discardableResult
    public func cancel(_ id: TimerID, generation: UInt64) -> Bool { self.core.cancel(id, generation: generation) }

    /// See ``TimerService/generation(of:)``.
    public func generation(of id: TimerID) -> UInt64? { self.core.generation(of: id) }

    /// See ``TimerService/cancelAll()``.
    public func cancelAll() { self.core.cancelAll() }

    /// See ``TimerService/isScheduled(_:)``.
    public func isScheduled(_ id: TimerID) -> Bool { self.core.isScheduled(id) }

    /// See ``TimerService/scheduledIDs``.
    public var scheduledIDs: [TimerID] { self.core.scheduledIDs }

    /// See ``TimerService/scheduledCount``.
    public var scheduledCount: Int { self.core.scheduledCount }

    /// Cancels every timer, releases every handler and refuses new timers. Never waits, so it is
    /// safe from any handler. Idempotent. A handler already running on another queue may finish.
    public func shutdown() {
        self.core.close(.shutDown)
        self.alarm.stop()
    }
}
