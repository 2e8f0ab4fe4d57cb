import Dispatch
import PreciseTimerCore

extension PreciseTimer {
    /// Shuts the service down like ``/PreciseTimerCore/TimerService/shutdown()``, then waits until every handler call in
    /// flight has returned, for at most `gracePeriod`, without blocking a thread.
    ///
    /// ```swift
    /// if await !timers.shutdown(gracePeriod: .seconds(5)) {
    ///     logger.warning("timer handlers still running 5 s after shutdown")
    /// }
    /// ```
    ///
    /// In order:
    /// 1. Every timer ends and every pending handler is released, on the calling thread (CPU
    ///    work, about 0.3 µs a timer, not a wait), and every later `schedule` throws ``/PreciseTimerCore/PreciseTimerError/Code/shutDown``. No handler call
    ///    begins after this: a ``/PreciseTimerCore/TimerExecutor/queue(_:)`` fire still waiting in its queue is
    ///    dropped there without calling its handler.
    /// 2. The engine is asked to stop: its loop thread exits; on a caller's base
    ///    (``init(eventBase:configuration:)``) the service's events come off the base as they
    ///    do for ``/PreciseTimerCore/TimerService/shutdown()``.
    /// 3. It waits, for at most `gracePeriod`, until every handler call that had begun, on the
    ///    loop (``/PreciseTimerCore/TimerExecutor/loop``) or on a queue
    ///    (``/PreciseTimerCore/TimerExecutor/queue(_:)``), has returned.
    /// 4. Then, no handler running, it waits for the loop thread to be gone (on a caller's base,
    ///    for the events to be off it, within the same bound as ``/PreciseTimerCore/TimerService/shutdown()``): no
    ///    handler can hold that up, so it takes microseconds, beyond the grace period if need be.
    ///
    /// A handler still running at the end of the grace period keeps running; the service is
    /// shut down all the same, and its handler is released when that call returns.
    ///
    /// - Parameter gracePeriod: The longest wait, counted from the call. `.zero` (or less)
    ///   waits for nothing and reports whether anything was still running.
    /// - Returns: `true` if no handler of the service was running any more when it returned
    ///   (an idle service returns `true` whatever the grace period, `.zero` included); `false`
    ///   only if a handler call was still running after `gracePeriod`. A timeout is not an error: the service is
    ///   shut down either way, and the result only says whether its handlers drained.
    ///
    /// - Important: It suspends instead of blocking, so any task may call it, including one on
    ///   Swift concurrency's cooperative pool; the waiting is done by Dispatch notifications and
    ///   a Dispatch timer. Task cancellation does not cut the wait short: `gracePeriod` bounds it.
    ///   A ``/PreciseTimerCore/TimerExecutor/queue(_:)`` handler that waits for this call to return waits for its
    ///   own call: it gets `false` after the grace period.
    @discardableResult
    public func shutdown(gracePeriod: Duration) async -> Bool {
        // In a forked child no handler of this service runs (see Fork safety).
        guard !self.core.isInherited else { return true }
        let nanoseconds = min(max(gracePeriod, .zero), PreciseTimer.maximumDuration).timerNanoseconds ?? 0
        let deadline = DispatchTime.now() + .nanoseconds(Int(nanoseconds))
        self.core.close(.shutDown)
        self.engine.requestStop()

        // `false` means a handler still runs, and nothing else: every call that began (on the
        // loop or on a queue) is counted until it returns, and no call begins once closed.
        let inFlight = self.core.inFlight
        let drained = await DeadlineWait.wait(until: deadline, isDone: { inFlight.isEmpty }) { done in
            inFlight.notify(queue: DeadlineWait.queue, done)
        }
        guard drained else { return false }
        // No handler runs, so the loop thread is on its way out (or a caller's loop takes the
        // events off at its next pass): wait for that, as the plain shutdown() does, within the
        // same bound it gives a caller's loop.
        let engine = self.engine
        _ = await DeadlineWait.wait(
            until: DispatchTime.now() + LibeventEngine.detachBound, isDone: { engine.hasStopped }
        ) { done in
            engine.finished.notify(queue: DeadlineWait.queue, execute: done)
        }
        return true
    }
}

/// Waits for a Dispatch notification or a deadline, whichever comes first, suspending the task
/// instead of blocking its thread.
private enum DeadlineWait {
    /// Where the deadline's timer and the notifications run: a queue of its own, not a global
    /// one. A serial queue targets an overcommitting root queue, which starts a thread even when
    /// the global pool's are all busy, so the grace period ends on time while handlers (on
    /// `DispatchQueue.global()`, say) block every thread of that pool, the very case it bounds.
    static let queue = DispatchQueue(label: "PreciseTimer.shutdown")

    /// - Parameters:
    ///   - isDone: Whether the wait is already over (checked first, so a past deadline does not
    ///     race a notification that is already due).
    ///   - register: Asks for `done` to be called once the wait is over.
    /// - Returns: `true` if the notification came first.
    static func wait(
        until deadline: DispatchTime, isDone: () -> Bool,
        register: (@escaping @Sendable () -> Void) -> Void
    ) async -> Bool {
        if isDone() { return true }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let timer = DispatchSource.makeTimerSource(queue: Self.queue)
            let outcome = Outcome(continuation, timer: timer)
            timer.setEventHandler { outcome.resume(false) }
            timer.schedule(deadline: deadline)
            timer.activate()
            register { outcome.resume(true) }
        }
    }

    /// Resumes the continuation exactly once, with whichever result comes first, and cancels
    /// the timer (which releases its handler, and so this object).
    private final class Outcome: Sendable {
        private let state: SemaphoreGuarded<(CheckedContinuation<Bool, Never>, any DispatchSourceTimer)?>

        init(_ continuation: CheckedContinuation<Bool, Never>, timer: any DispatchSourceTimer) {
            self.state = SemaphoreGuarded((continuation, timer))
        }

        func resume(_ result: Bool) {
            let state = self.state.withLock { state in
                defer { state = nil }
                return state
            }
            guard let (continuation, timer) = state else { return }
            timer.cancel()
            continuation.resume(returning: result)
        }
    }
}
