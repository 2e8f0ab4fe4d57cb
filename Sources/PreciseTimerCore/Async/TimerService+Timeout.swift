import Synchronization

extension TimerService {
    /// Runs `operation` with a time limit: when `duration` passes before it returns, its task is
    /// cancelled, and this throws ``PreciseTimerError/Code/timedOut`` once it has returned.
    ///
    /// One timer per call, on this service's monotonic clock: never early, and as late as
    /// `tolerance` allows (a timeout is rarely precise: a tolerance lets timeouts share the
    /// loop's wake-ups). `operation` runs in a child task that inherits the caller's priority
    /// and task-local values; cancelling the caller cancels it too. What `operation` does with
    /// cancellation is its own business: an operation that ignores it runs to its end, and the
    /// call still throws `.timedOut` after that, never before.
    ///
    /// ```swift
    /// let row = try await timers.withTimeout(.milliseconds(250)) {
    ///     try await database.query("SELECT …")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - duration: How long `operation` may run. Negative or beyond
    ///     ``TimerService/maximumDuration``: ``PreciseTimerError/Code/invalidDelay``, and
    ///     `operation` does not run.
    ///   - tolerance: How late the limit may be enforced (see ``TimerOptions/tolerance``); `nil`
    ///     or `.zero`: at the deadline.
    ///   - operation: The work to bound.
    /// - Returns: What `operation` returned, when it returned before the deadline.
    /// - Throws: ``PreciseTimerError/Code/timedOut`` when the deadline came first; otherwise what
    ///   `operation` threw; the service's scheduling errors (``PreciseTimerError/Code/shutDown``).
    public func withTimeout<T: Sendable>(
        _ duration: Duration, tolerance: Duration? = nil, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await self.withTimeLimit(.after(duration), tolerance: tolerance, operation)
    }

    /// Runs `operation` until `deadline` on this service's clock: when the deadline passes before
    /// it returns, its task is cancelled, and this throws ``PreciseTimerError/Code/timedOut``
    /// once it has returned. See ``withTimeout(_:tolerance:_:)``; a deadline already past
    /// cancels the operation's task as it starts.
    ///
    /// - Parameters:
    ///   - deadline: When the limit falls, on ``TimerService/now``'s clock. More than
    ///     ``TimerService/maximumDuration`` from now: ``PreciseTimerError/Code/invalidDelay``.
    ///   - tolerance: How late the limit may be enforced; `nil` or `.zero`: at the deadline.
    ///   - operation: The work to bound.
    /// - Returns: What `operation` returned, when it returned before the deadline.
    /// - Throws: ``PreciseTimerError/Code/timedOut`` when the deadline came first; otherwise what
    ///   `operation` threw; the service's scheduling errors.
    public func withDeadline<T: Sendable>(
        _ deadline: MonotonicInstant, tolerance: Duration? = nil,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await self.withTimeLimit(.at(deadline), tolerance: tolerance, operation)
    }

    private func withTimeLimit<T: Sendable>(
        _ trigger: TimerTrigger, tolerance: Duration?, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let race = TimeLimitRace()
        // Scheduled before the operation starts, so bad input throws before any work is done.
        var options = TimerOptions()
        if let tolerance { options.tolerance = tolerance }
        let (handle, task) = try self.startTimeLimit(trigger, options: options, race: race, operation)
        let outcome = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        guard race.finish() else {
            throw PreciseTimerError(.timedOut, id: handle.id)
        }
        self.cancel(handle)
        return try outcome.get()
    }

    /// Schedules the limit's timer, then starts the operation's task and hands it to the timer.
    private func startTimeLimit<T: Sendable>(
        _ trigger: TimerTrigger, options: TimerOptions, race: TimeLimitRace,
        _ operation: @escaping @Sendable () async throws -> T
    ) throws -> (TimerHandle, Task<T, any Error>) {
        let handle = try self.scheduleTimer(trigger, id: nil, options: options) { _ in race.expire() }
        let task = Task { try await operation() }
        race.arm(task.cancel)
        return (handle, task)
    }
}

/// Which came first, the operation's end or its deadline, decided once (an atomic exchange), and
/// the operation's cancel, which the timer calls when the deadline wins.
private final class TimeLimitRace: Sendable {
    private enum State: UInt8, AtomicRepresentable {
        case running, finished, expired
    }

    private let state = Atomic<State>(.running)
    /// The operation task's `cancel`, set once the task exists (a deadline that came before that
    /// is seen by ``arm(_:)``). A semaphore, as everywhere here: ThreadSanitizer cannot see a
    /// `Mutex`'s ordering on Linux.
    private let cancel = SemaphoreGuarded<(@Sendable () -> Void)?>(nil)

    /// The task exists: the deadline can cancel it (at once, if it already passed).
    func arm(_ cancel: @escaping @Sendable () -> Void) {
        self.cancel.withLock { $0 = cancel }
        if self.state.load(ordering: .acquiring) == .expired { cancel() }
    }

    /// The timer fired: the deadline wins unless the operation finished first.
    func expire() {
        guard
            self.state.compareExchange(expected: .running, desired: .expired, ordering: .acquiringAndReleasing)
                .exchanged
        else { return }
        self.cancel.withLock { $0 }?()
    }

    /// The operation returned. Returns whether it finished before the deadline.
    func finish() -> Bool {
        self.state.compareExchange(expected: .running, desired: .finished, ordering: .acquiringAndReleasing).exchanged
    }
}
