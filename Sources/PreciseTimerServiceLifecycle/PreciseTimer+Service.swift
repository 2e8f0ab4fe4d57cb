import Logging
import PreciseTimer
import PreciseTimerCore
import ServiceLifecycle

/// `PreciseTimer` as a swift-service-lifecycle `Service`, so a `ServiceGroup` owns its lifetime.
///
/// ```swift
/// import PreciseTimer
/// import PreciseTimerServiceLifecycle
/// import ServiceLifecycle
///
/// EarlySignals.hold()                            // first thing in main: see EarlySignals
/// let timers = try PreciseTimer()
/// let group = ServiceGroup(
///     services: [timers, sessions, server],      // timers first: they stop last
///     gracefulShutdownSignals: [.sigterm, .sigint],
///     logger: logger
/// )
/// try await group.run()
/// ```
///
/// ## The order of services
///
/// A `ServiceGroup` starts its services in the order they are listed and, on graceful shutdown,
/// stops them in **reverse** order, one at a time, waiting for each `run()` to return before
/// signalling the next. List the timer service **before** every service that schedules timers on
/// it: those services stop first (their graceful shutdown can still schedule, reschedule and
/// cancel, and their last timers still fire), and the timers stop last, when nothing uses them
/// any more. Listed after them, it would shut down first and their shutdown code would get
/// ``PreciseTimerError/Code/shutDown`` from every schedule.
///
/// ## Handlers in flight
///
/// When `run()` ends the service (``PreciseTimer/shutdown(gracePeriod:)``): no handler call
/// begins after it; every pending timer is ended and its handler released; then `run()`
/// waits for the handlers already running, a ``TimerExecutor/loop`` handler on the loop thread
/// as well as ``TimerExecutor/queue(_:)`` handlers on their queues, for at most
/// ``PreciseTimer/Configuration/shutdownGracePeriod`` (5 seconds by default). A handler that
/// runs longer is left running; `run()` returns all the same, without throwing. Task
/// cancellation (a group's escalation) does not shorten that wait: the grace period bounds it,
/// so set it below the group's `maximumGracefulShutdownDuration`, or to `.zero` to return as soon
/// as the timers are ended.
extension PreciseTimer: Service {
    /// Runs until graceful shutdown, task cancellation or a direct ``/PreciseTimerCore/TimerService/shutdown()``,
    /// then shuts the service down and returns.
    ///
    /// The timers run from ``PreciseTimer/init(configuration:)`` on: `run()` only ties the
    /// service's end to the group's. Graceful shutdown and task cancellation end it the same way:
    /// ``PreciseTimer/shutdown(gracePeriod:)`` with the configuration's
    /// ``PreciseTimer/Configuration/shutdownGracePeriod`` (every timer ended, every handler
    /// released, the loop thread gone, and the handlers in flight given that long to return).
    /// No thread of Swift concurrency's cooperative pool waits meanwhile. It never throws: a
    /// `ServiceGroup` sees a service that finished when told to.
    ///
    /// It first calls ``EarlySignals/deliverHeld()``: a shutdown signal that arrived while the
    /// daemon started, held by ``EarlySignals/hold(_:)``, reaches the group now.
    ///
    /// A service shut down directly (``/PreciseTimerCore/TimerService/shutdown()``, from anywhere, or ended by a
    /// libevent failure) makes `run()` return too, after the same wait for handlers: to a
    /// `ServiceGroup` that is a service that ended on its own, which by default ends the group.
    public func run() async {
        // The group listens for its signals before it starts a service: hand it those that came
        // earlier, while the daemon started (see EarlySignals).
        EarlySignals.deliverHeld()
        await ShutdownSignal.wait(for: self)
        let gracePeriod = self.configuration.shutdownGracePeriod
        if await !self.shutdown(gracePeriod: gracePeriod) {
            // The group goes on stopping; an operator should know a handler outlived the bound.
            self.configuration.logger.warning(
                "Timer handlers still running after the shutdown grace period",
                metadata: ["timer.grace_period": "\(gracePeriod)"])
        }
    }
}

/// Waits for graceful shutdown, task cancellation or the service's own shutdown, whichever
/// comes first, race-free.
///
/// Not `gracefulShutdown()`: in swift-service-lifecycle 2.13.0 its waiter sets its continuation
/// inside an actor while the cancellation handler finishes it from a separate unstructured
/// task, so a task cancelled before (or just as) it starts waiting can wait forever (seen under
/// ThreadSanitizer: `run()` in an already-cancelled task never returned).
private final class ShutdownSignal: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Void, Never>?)
        case signalled
    }

    // Not a Mutex: ThreadSanitizer does not see a Mutex's futex on Linux.
    private let state = SemaphoreGuarded(State.waiting(nil))

    static func wait(for timers: PreciseTimer) async {
        let signal = ShutdownSignal()
        // Fires at once if the service is already shut down.
        timers.notifyOnShutdown { signal.fire() }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { continuation in
                    let resumeNow = signal.state.withLock { state -> Bool in
                        guard case .waiting = state else { return true }
                        state = .waiting(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onGracefulShutdown: {
                signal.fire()
            }
        } onCancel: {
            signal.fire()
        }
    }

    /// Ends the wait (now, or as soon as it starts); the continuation is resumed outside the lock.
    private func fire() {
        let continuation = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state = .signalled }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        continuation?.resume()
    }
}
