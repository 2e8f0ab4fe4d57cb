import PreciseTimer
import ServiceLifecycle
import Synchronization

/// `PreciseTimer` as a swift-service-lifecycle `Service`, so a `ServiceGroup` owns its lifetime.
///
/// ```swift
/// import PreciseTimer
/// import PreciseTimerServiceLifecycle
/// import ServiceLifecycle
///
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
/// When `run()` ends the service (``PreciseTimer/shutdown()``): no handler call begins after it;
/// every pending timer is cancelled and its handler released; a ``TimerExecutor/loop`` handler
/// that is running is waited for, since the loop thread is joined; a handler already running on a
/// Dispatch queue (``TimerExecutor/queue(_:)``) may still be finishing when `run()` returns.
/// Code that must see the last handler finish should wait for it itself (a `DispatchGroup`, or
/// `.loop` handlers).
extension PreciseTimer: Service {
    /// Runs until graceful shutdown or until the task is cancelled, then shuts the service down
    /// and returns.
    ///
    /// The timers run from ``PreciseTimer/init(configuration:)`` on: `run()` only ties the
    /// service's end to the group's. Graceful shutdown and task cancellation end it the same way:
    /// ``PreciseTimer/shutdown()`` (every timer ended, every handler released, the loop thread
    /// joined), run on a thread of its own so that no thread of Swift concurrency's cooperative
    /// pool waits for the join (it takes about 2 µs per pending timer). It never throws: a
    /// `ServiceGroup` sees a service that finished when told to.
    ///
    /// Outside a `ServiceGroup` there is no graceful shutdown to wait for: `run()` returns when
    /// its task is cancelled. A service shut down directly (``PreciseTimer/shutdown()``) keeps
    /// `run()` waiting until one of those.
    public func run() async {
        await ShutdownSignal.wait()
        await DetachedThread.run { self.shutdown() }
    }
}

/// Waits for graceful shutdown or task cancellation, whichever comes first, race-free.
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

    private let state = Mutex(State.waiting(nil))

    static func wait() async {
        let signal = ShutdownSignal()
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
