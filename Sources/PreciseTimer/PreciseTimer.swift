import Logging
import PreciseTimerCore

/// A timer service on libevent: one `event_base` with `EVENT_BASE_FLAG_PRECISE_TIMER`
/// (timerfd, `CLOCK_MONOTONIC`), driven by one named thread it owns, or a base the caller
/// already runs (``init(eventBase:configuration:)``).
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
/// A service belongs to the process that created it. In a child created with `fork()` the loop
/// thread does not exist, the registry's semaphore may have been copied while held and the
/// doorbell is the parent's `eventfd`, so an inherited service touches none of them: every call
/// that schedules throws ``/PreciseTimerCore/PreciseTimerError/Code/shutDown``, the others return `false`, `nil`,
/// `0` or nothing, and ``/PreciseTimerCore/TimerService/shutdown()`` and `deinit` return at once without waiting (the child may
/// simply drop its reference). Create a new `PreciseTimer` in the child if it needs timers.
///
/// ## Shutting down
///
/// ``/PreciseTimerCore/TimerService/shutdown()`` cancels everything, releases every handler, stops the loop thread
/// and frees libevent (on a caller's base: takes the service's four events off it and frees them).
/// It waits for the loop thread to exit, unless called on it (from a ``/PreciseTimerCore/TimerExecutor/loop``
/// handler): then it returns at once and the thread exits when the handler returns. On a
/// caller's base, see ``init(eventBase:configuration:)`` for what it waits for on which thread.
/// It does not wait for ``/PreciseTimerCore/TimerExecutor/queue(_:)`` handlers already running:
/// ``shutdown(gracePeriod:)`` does. Idempotent and safe to call from several threads at once:
/// every caller but the loop thread returns once libevent is done with the service, so no
/// ``/PreciseTimerCore/TimerExecutor/loop`` handler runs any more, even when another thread (or the loop failing)
/// closed the core first.
///
/// ## Engine failures
///
/// If libevent fails under the service (`event_base_loop` returns -1, or arming the alarm with
/// `event_add` fails), the service does not go on silently: every timer is ended and its handler
/// released, the loop thread exits, and every later `schedule` throws
/// ``/PreciseTimerCore/PreciseTimerError/Code/libeventFailure`` naming the function and its return code. The
/// failure is also logged once, at `error`, to ``Configuration/logger``.
///
/// - Important: handlers on ``/PreciseTimerCore/TimerExecutor/loop`` run on the service's thread and must not
///   block. Releasing the last reference shuts the service down without waiting (see `deinit`).
public final class PreciseTimer: TimerCoreService {
    /// The configuration the service was created with.
    public let configuration: Configuration
    /// The registry the service drives. Reachable from the inlinable hot path
    /// (`PreciseTimer+HotPath.swift`), so that a call reaches the core in one hop.
    @usableFromInline package let core: TimerCore
    /// ``core``, unretained (see ``TimerCoreService/coreReference``).
    package var coreReference: Unmanaged<TimerCore> { .passUnretained(self.core) }
    package let units: TimerUnitTable
    let engine: LibeventEngine

    /// Steps the engine's wall clock by `step` and pretends a suspend of `suspend` (the wall and
    /// continuous clocks move by it), then makes the engine see a clock change as a
    /// `TFD_TIMER_CANCEL_ON_SET` timerfd reports one (tests only: the machine's clocks are left
    /// alone).
    package func simulateClockChange(wallClockStep step: Duration = .zero, suspend: Duration = .zero) {
        let stepNanoseconds = step.components.seconds * 1_000_000_000 + step.components.attoseconds / 1_000_000_000
        let suspendNanoseconds =
            suspend.components.seconds * 1_000_000_000 + suspend.components.attoseconds / 1_000_000_000
        (self.core.doorbell as? EventFDWaker)?.shiftClocks(
            wall: stepNanoseconds &+ suspendNanoseconds, continuous: suspendNanoseconds)
        self.engine.injectClockChange()
    }

    /// Makes every later service of this process build its base in the process's descriptor
    /// table, as where the kernel refuses a private one (tests only: a seccomp filter or an old
    /// kernel cannot be had here).
    package static func refusePrivateDescriptorTables() {
        PrivateTableBuild.refuseForTesting()
    }

    /// Makes the engine see a libevent failure (tests only: a real one cannot be provoked).
    package func injectEngineFailure(_ failure: InjectedEngineFailure) {
        self.engine.inject(failure)
    }

    /// Creates the service and starts its thread.
    ///
    /// - Parameter configuration: Thread name, precision and scheduling options.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError`` with ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration`` for a
    ///   value out of range, ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` when the `eventfd` or the
    ///   thread cannot be created (out of file descriptors, `SCHED_FIFO` not permitted), or
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/libeventFailure`` when libevent cannot build its base.
    public convenience init(configuration: Configuration = .init()) throws {
        try configuration.validate()
        let waker = try EventFDWaker()
        let core = TimerCore(doorbell: waker, instruments: TimerInstruments(configuration))
        let engine = try LibeventEngine(core: core, waker: waker, configuration: configuration)
        self.init(configuration: configuration, core: core, engine: engine, thread: configuration.threadName)
    }

    /// Creates the service on a libevent base the caller already runs, for daemons built on
    /// libevent: it starts no thread, and the caller's loop runs the timers.
    ///
    /// ```swift
    /// // C side, or Swift with libevent: the base needs EVENT_BASE_FLAG_PRECISE_TIMER.
    /// let timers = try PreciseTimer(eventBase: base)
    /// try timers.scheduleRepeating(id: "flush", every: .milliseconds(10)) { _ in
    ///     flush()  // runs inside the caller's event_base_loop, between its other callbacks
    /// }
    /// event_base_dispatch(base)
    /// ```
    ///
    /// The service adds its events to the base: a timer event armed at its earliest deadline,
    /// a read event on an `eventfd` through which other threads wake the loop when they
    /// schedule or cancel, and two read events on timerfds (`CLOCK_REALTIME` and
    /// `CLOCK_BOOTTIME`) for wall-clock and continuous timers. Handlers on
    /// ``/PreciseTimerCore/TimerExecutor/loop`` run on the caller's loop thread, inside
    /// `event_base_loop`; at most 4096 of them run before the loop serves its other events. The
    /// base needs no locking (`evthread_use_pthreads()` is not required): no other thread ever
    /// calls libevent on it for the service.
    ///
    /// - Parameters:
    ///   - eventBase: The caller's `struct event_base *`, which stays the caller's. It must use
    ///     epoll and have been built with `EVENT_BASE_FLAG_PRECISE_TIMER` (or with
    ///     `EVENT_PRECISE_TIMER` set in the environment); without it libevent waits in whole
    ///     milliseconds and reads a clock that moves in 1 to 4 ms steps.
    ///   - configuration: ``Configuration/spinMargin`` applies (the spin runs on the caller's
    ///     thread). ``Configuration/realtimePriority``, ``Configuration/cpuAffinity`` and
    ///     ``Configuration/timerSlack`` describe a thread of the service's own and must be `nil`;
    ///     ``Configuration/threadName`` is not used.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError`` with ``/PreciseTimerCore/PreciseTimerError/Code/invalidEventBase`` for a
    ///   `nil` base, a backend other than epoll, or a base without the precise timer (its
    ///   ``/PreciseTimerCore/PreciseTimerError/value`` says which); ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration``
    ///   for a thread option or a value out of range; ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure``
    ///   when the `eventfd` cannot be created; ``/PreciseTimerCore/PreciseTimerError/Code/libeventFailure`` when the
    ///   events cannot be added (`event_assign`, `event_add`).
    ///
    /// - Important: The service calls libevent only on the thread that drives the base, the
    ///   *loop thread*, which it learns when the loop first runs a callback of the service (the
    ///   doorbell rung at creation is served at the loop's first pass); if the base moves to
    ///   another thread, the one that last ran a callback of the service counts. It never
    ///   guesses: until a callback has run, no thread counts as the loop thread.
    ///   - Create the service on the loop thread, before it enters `event_base_loop` or from
    ///     one of its callbacks.
    ///   - Schedule, cancel, reschedule, pause and query from any thread: those take a lock
    ///     and write the `eventfd`, never call libevent.
    ///   - ``/PreciseTimerCore/TimerService/shutdown()`` on the loop thread (from a handler or
    ///     another callback, or before or after the loop runs, once it has run a callback of the
    ///     service) takes the service's events off the base and frees them before it returns;
    ///     from a ``/PreciseTimerCore/TimerExecutor/loop`` handler, as that handler's callback
    ///     returns to libevent. The base and its other events are left alone.
    ///   - ``/PreciseTimerCore/TimerService/shutdown()`` on any other thread, or before the loop
    ///     ever ran a callback of the service, wakes the loop and waits until the loop thread
    ///     has taken the events off, as soon as its current callback returns, for at most
    ///     2 seconds: a loop that does not run (not started yet, or already returned) cannot be
    ///     raced. It then returns and leaves the events on the base, still allocated: the loop's
    ///     next pass frees them (`event_base_loop(base, EVLOOP_NONBLOCK)` is enough). If the
    ///     caller frees the base instead, libevent drops them, and the four events, the `eventfd`
    ///     and the two timerfds (about 600 bytes and three descriptors) are never freed. So shut
    ///     the service down on the thread that ran the loop, before `event_base_free`; a service
    ///     created and shut down before the loop ever ran needs that one pass first.
    ///   - Releasing the last reference to the service shuts it down without waiting (see
    ///     `deinit`): the same rules apply, except that nothing waits for the loop.
    ///   - In a child created with `fork()` that calls `event_reinit` and runs the base it
    ///     inherited, the service's callbacks run nothing: the first of them takes the service's
    ///     events off the child's base and reads none of the descriptors (they are shared with
    ///     the parent). Create a new service in the child.
    public convenience init(eventBase: OpaquePointer?, configuration: Configuration = .init()) throws {
        guard let eventBase else {
            throw PreciseTimerError(.invalidEventBase, value: "nil (an event_base * is required)")
        }
        try configuration.validate()
        try configuration.validateForCallersThread()
        let waker = try EventFDWaker()
        // The same logging and metrics as on a thread of its own: the configuration's instruments.
        let core = TimerCore(doorbell: waker, instruments: TimerInstruments(configuration))
        let engine = try LibeventEngine(core: core, waker: waker, eventBase: eventBase, configuration: configuration)
        self.init(configuration: configuration, core: core, engine: engine, thread: "caller's event_base")
    }

    /// `WakeSystem=`'s alarm: a `CLOCK_BOOTTIME_ALARM` timerfd (see ``TimerUnitHost``).
    package func makeWakeAlarm(for id: TimerID) throws(PreciseTimerError) -> any TimerWakeAlarm {
        try WakeAlarmTimerFD(id: id)
    }

    /// Both public initializers end here, once the engine runs.
    private init(configuration: Configuration, core: TimerCore, engine: LibeventEngine, thread: String) {
        self.configuration = configuration
        self.core = core
        self.units = TimerUnitTable(startedAt: self.core.now)
        self.engine = engine
        configuration.logger.debug("Timer service started", metadata: ["timer.thread": "\(thread)"])
    }

    /// Releasing the last reference shuts the service down without waiting for anything: every
    /// timer ends and its handler is released here, and the engine is asked to let go (the loop
    /// thread, which keeps what it needs alive, frees libevent and exits on its own; a caller's
    /// loop takes the events off its base at its next pass, or at once when this is its thread
    /// between callbacks). So a reference dropped on Swift concurrency's pool never blocks it,
    /// even while a `.loop` handler runs.
    deinit {
        guard !self.core.isInherited else { return }
        self.core.close(.shutDown)
        self.engine.requestStop()
    }

    /// The engine's part of ``/PreciseTimerCore/TimerService/shutdown()``, once the core is closed: stops the loop
    /// thread and frees libevent, or takes the service's four events off a caller's base (see
    /// Shutting down).
    package func stopEngine() {
        self.engine.stop()
    }

    /// Runs `body` once the service is shut down (or its engine failed), on the thread that
    /// shuts it down, or at once if it already is. Keep `body` short.
    package func notifyOnShutdown(_ body: @escaping @Sendable () -> Void) {
        self.core.closeNotice.notify(body)
    }
}
