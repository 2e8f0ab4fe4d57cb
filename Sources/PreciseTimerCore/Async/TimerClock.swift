/// A `Clock` whose sleeps are one-shot timers of a ``TimerService``: as precise as the service's
/// own callbacks, plus one task resumption.
///
/// ```swift
/// let timers = try PreciseTimer()
/// var deadline = timers.now
/// while running {
///     deadline = deadline.advanced(by: .milliseconds(10))
///     try await Task.sleep(until: deadline, clock: timers.clock)  // absolute: no drift
///     step()
/// }
/// ```
///
/// Reached as ``TimerService/clock``. Its `Instant` is ``MonotonicInstant`` and its `now` is the
/// service's ``TimerService/now`` (`CLOCK_MONOTONIC` for the real services, virtual time for a
/// test service), so `Task.sleep(until:clock:)`, `Task.sleep(for:clock:)` and clock-generic
/// algorithms (debounce, throttle, timers of swift-async-algorithms) run on it.
///
/// Rules of ``sleep(until:tolerance:)``:
/// - A deadline that is not in the future, however far in the past (`Int64.min` nanoseconds
///   included), returns at once, after a cancellation check, without touching the service: as
///   Swift's own clocks, Go's `time.Sleep` and tokio's `sleep_until` do, so clock-generic code
///   that computes a deadline long gone is not handed an error.
/// - A deadline more than ``TimerService/maximumDuration`` in the future throws
///   ``PreciseTimerError/Code/invalidDelay``: no service can keep it.
/// - Otherwise it schedules a one-shot at `deadline` (a generated ID, on the service's thread)
///   and resumes the caller from its handler; it never returns before `deadline`.
/// - Task cancellation cancels that one-shot at once (by its generation, so it can never end
///   another timer) and throws `CancellationError` right away, not at the deadline.
/// - A service shut down before or during the sleep ends it with ``PreciseTimerError`` code
///   ``PreciseTimerError/Code/shutDown``; so does ``TimerService/cancelAll()`` during the sleep,
///   which withdraws the sleep's timer just as a shutdown does. A sleep never hangs.
/// - Whatever the interleaving of fire, cancellation and shutdown, the caller is resumed exactly
///   once and nothing stays scheduled afterwards.
/// - `tolerance` is honoured as ``TimerOptions/tolerance``: the sleep may end up to that late,
///   never early, sharing a wake-up with other tolerant timers. `nil` is precise (standard clocks
///   coalesce wake-ups when `tolerance` is `nil`; this one never does).
public struct TimerClock: Clock, Sendable {
    /// The clock's instant: nanoseconds on `CLOCK_MONOTONIC` (or the test service's virtual time).
    public typealias Instant = MonotonicInstant

    /// The service that runs this clock's sleeps. The clock keeps it alive.
    public let service: any TimerService

    /// Creates a clock whose sleeps are timers of `service`. Usually reached as
    /// ``TimerService/clock``.
    public init(service: any TimerService) {
        self.service = service
    }

    /// The service's current time (``TimerService/now``).
    public var now: MonotonicInstant { self.service.now }

    /// One nanosecond: deadlines are whole nanoseconds. What a sleep really achieves is the
    /// service's precision (tens of microseconds for `PreciseTimer`; see the benchmarks).
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends the task until `deadline`.
    ///
    /// - Parameters:
    ///   - deadline: When to resume. Not in the future, however far in the past: returns at once
    ///     (after a cancellation check).
    ///   - tolerance: How late the sleep may end (see ``TimerOptions/tolerance``); `nil` or
    ///     `.zero`: at the deadline. Negative: ``PreciseTimerError/Code/invalidDelay``.
    /// - Throws: `CancellationError` as soon as the task is cancelled (the timer is cancelled
    ///   then); ``PreciseTimerError`` with ``PreciseTimerError/Code/shutDown`` when the service is
    ///   or gets shut down (or ``TimerService/cancelAll()`` withdraws the timer), and with
    ///   ``PreciseTimerError/Code/invalidDelay`` when `deadline` is more than
    ///   ``TimerService/maximumDuration`` in the future.
    public func sleep(until deadline: MonotonicInstant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let now = self.service.now
        // Checked after the past: any instant already passed has nothing left to wait for, however
        // far back it lies.
        guard deadline > now else { return }
        _ = try TimerRequest.validated(deadline, now: now.nanoseconds, id: nil)
        let sleeper = Sleeper(service: self.service)
        try await withTaskCancellationHandler {
            try await Sleeper.withContinuation { continuation in
                sleeper.start(continuation, deadline: deadline, tolerance: tolerance ?? .zero)
            }
        } onCancel: {
            sleeper.cancel()
        }
    }
}

extension TimerService {
    /// A `Clock` whose sleeps are timers of this service: see ``TimerClock``.
    ///
    /// ```swift
    /// try await Task.sleep(until: timers.now.advanced(by: .milliseconds(5)), clock: timers.clock)
    /// ```
    public var clock: TimerClock { TimerClock(service: self) }
}

/// One sleep: a small state machine under a lock that decides, exactly once, how the sleeping
/// task resumes (fired, cancelled, or its timer withdrawn by the service). Continuations are
/// resumed outside the lock.
final class Sleeper: Sendable {
    #if DEBUG
        // Checked in debug builds, so a double resume traps in the tests (and under sanitizers).
        typealias Continuation = CheckedContinuation<Void, any Error>
        static func withContinuation(_ body: (Continuation) -> Void) async throws {
            try await withCheckedThrowingContinuation(body)
        }
    #else
        typealias Continuation = UnsafeContinuation<Void, any Error>
        static func withContinuation(_ body: (Continuation) -> Void) async throws {
            try await withUnsafeThrowingContinuation(body)
        }
    #endif

    private enum Phase {
        /// Nothing yet.
        case idle
        /// Cancelled before the continuation was registered (a tombstone).
        case cancelled
        /// The task is suspended; the timer is being scheduled or is scheduled.
        case waiting(Continuation)
        /// The continuation was resumed.
        case done
    }

    private struct State {
        var phase = Phase.idle
        /// The scheduled timer, once `scheduleTimer` has returned.
        var timer: TimerHandle?
    }

    private let service: any TimerService
    private let state = SemaphoreGuarded(State())

    init(service: any TimerService) {
        self.service = service
    }

    /// Registers the continuation, then schedules the one-shot (outside the lock: a handler on
    /// another thread may fire before `schedule` returns, and finds the continuation there).
    func start(_ continuation: Continuation, deadline: MonotonicInstant, tolerance: Duration) {
        let proceed = self.state.withLock { state -> Bool in
            guard case .idle = state.phase else { return false }  // cancelled already
            state.phase = .waiting(continuation)
            return true
        }
        guard proceed else {
            continuation.resume(throwing: CancellationError())
            return
        }
        // The handler holds the only reference to `link`: when the service releases the handler
        // without calling it (shutdown, cancelAll), `link`'s deinit ends the sleep.
        let link = SleeperLink(self)
        withExtendedLifetime(link) {
            do {
                // The handle is this sleep's timer, whatever happened to it since: cancelling it
                // never reaches another timer.
                let options = TimerOptions(tolerance: tolerance)
                let timer = try self.service.scheduleTimer(.at(deadline), id: nil, options: options) { _ in
                    link.sleeper.finish(with: .success(()))
                }
                let ended = self.state.withLock { state -> Bool in
                    guard case .waiting = state.phase else { return true }
                    state.timer = timer
                    return false
                }
                // Cancelled (or fired) while `schedule` ran: `cancel()` could not see the timer.
                if ended {
                    self.service.cancel(timer)
                }
            } catch {
                self.finish(with: .failure(error))
            }
        }
    }

    /// Task cancellation: ends the sleep with `CancellationError` and cancels its timer.
    func cancel() {
        let (continuation, timer) = self.state.withLock { state -> (Continuation?, TimerHandle?) in
            switch state.phase {
            case .idle:
                state.phase = .cancelled
                return (nil, nil)
            case .waiting(let continuation):
                state.phase = .done
                return (continuation, state.timer)
            case .cancelled, .done:
                return (nil, nil)
            }
        }
        // Cancel first: the handler is released with the phase already `.done`, so the link's
        // deinit does nothing.
        if let timer {
            self.service.cancel(timer)
        }
        continuation?.resume(throwing: CancellationError())
    }

    /// Fired, failed to schedule, or withdrawn: resumes the task if nothing else did.
    func finish(with result: Result<Void, any Error>) {
        let continuation = self.state.withLock { state -> Continuation? in
            guard case .waiting(let continuation) = state.phase else { return nil }
            state.phase = .done
            return continuation
        }
        continuation?.resume(with: result)
    }
}

/// Captured by a sleep's handler, and by nothing else: released when the service releases the
/// handler. If the handler was never called by then, the service withdrew the timer.
private final class SleeperLink: Sendable {
    let sleeper: Sleeper

    init(_ sleeper: Sleeper) {
        self.sleeper = sleeper
    }

    deinit {
        self.sleeper.finish(
            with: .failure(PreciseTimerError(.shutDown, value: "the service withdrew a sleep's timer")))
    }
}
