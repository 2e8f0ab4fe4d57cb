/// The ticks of a repeating timer as an `AsyncSequence`: made by
/// ``TimerService/ticks(every:startingAfter:missedTicks:)``.
///
/// ```swift
/// for await tick in try timers.ticks(every: .milliseconds(10)) {
///     if tick.missed > 0 { log("fell behind by \(tick.missed) periods") }
///     step()
/// }
/// ```
///
/// - **The grid.** Each iterator starts its own repeating timer (a generated ID) when it is made,
///   that is when a `for await` loop begins: the first tick comes one interval later (or after
///   `startingAfter`), then on the fixed-rate grid `start + k·interval`. A consumer that keeps up
///   sees every tick, on the grid.
/// - **A slow consumer** never makes memory grow: at most one tick waits. A tick that finds one
///   waiting merges into it: the merged tick is the later one (its ``Tick/count``,
///   ``Tick/scheduledAt`` and ``Tick/firedAt``) and its ``Tick/missed`` is the sum of both
///   ticks' periods minus one, so over everything a loop receives, the sum of `1 + missed` is the
///   number of periods that passed: none is lost silently, none is counted twice. (Its
///   ``Tick/lateness`` is the service's lateness, not counting the time the tick waited.)
/// - **Leaving the loop** (`break`, `return`, a thrown error, or dropping the iterator) cancels
///   the timer and releases everything at once.
/// - **The end.** Iteration ends (`next()` returns `nil`) when the task is cancelled (the timer
///   is cancelled at once, and a waiting tick is dropped) or when the service withdraws the
///   timer: it was shut down (or already was when the loop began), or
///   ``TimerService/cancelAll()`` ran. A tick that was waiting then is still delivered first.
/// - **Iterating many times.** A sequence may be iterated any number of times, one after the
///   other or at once: every iterator is independent, with its own timer, grid and buffer.
///
/// Unlike `AsyncTimerSequence` of swift-async-algorithms, which sleeps until `last + interval`
/// after each element and so, after a stall, catches up with a burst of immediate elements (and
/// ends silently on any sleep error), a tick sequence stays on its grid: after a stall the
/// consumer gets one tick whose `missed` says how many periods it covers, then ticks on the grid
/// again.
public struct TickSequence: AsyncSequence, Sendable {
    /// Every element is a ``Tick``.
    public typealias Element = Tick
    /// Iteration never throws: it ends with `nil`.
    public typealias Failure = Never

    private let service: any TimerService
    private let interval: Duration
    private let delay: Duration?
    private let missedTicks: MissedTickPolicy

    /// Validated by ``TimerService/ticks(every:startingAfter:missedTicks:)``.
    init(service: any TimerService, interval: Duration, delay: Duration?, missedTicks: MissedTickPolicy) {
        self.service = service
        self.interval = interval
        self.delay = delay
        self.missedTicks = missedTicks
    }

    /// Starts a repeating timer of its own and returns an iterator over its ticks. When the
    /// service is shut down, the iterator returns `nil` at once.
    public func makeAsyncIterator() -> Iterator {
        let buffer = TickBuffer()
        // The handler holds the only reference to `link`: when the service releases the handler
        // (cancel, shutdown, cancelAll), `link`'s deinit ends the iteration.
        let link = TickLink(buffer)
        let timer = withExtendedLifetime(link) { () -> TimerHandle? in
            do {
                return try self.service.scheduleTimer(
                    .every(self.interval, startingAfter: self.delay), id: nil,
                    options: TimerOptions(missedTicks: self.missedTicks)
                ) { tick in
                    link.buffer.deliver(tick)
                }
            } catch {
                buffer.end(dropWaiting: false)
                return nil
            }
        }
        return Iterator(lifetime: TickLifetime(service: self.service, buffer: buffer, timer: timer))
    }

    /// Waits for the next tick of one timer.
    ///
    /// An iterator is not `Sendable`: use it from one task. Copies share the same timer, which is
    /// cancelled when the last copy is gone.
    public struct Iterator: AsyncIteratorProtocol {
        private let lifetime: TickLifetime

        init(lifetime: TickLifetime) {
            self.lifetime = lifetime
        }

        /// The next tick (possibly merged, see ``TickSequence``), or `nil` once the task was
        /// cancelled or the service withdrew the timer.
        public mutating func next() async -> Tick? {
            await self.next(isolation: nil)
        }

        /// The next tick, without leaving the caller's actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Tick? {
            let lifetime = self.lifetime
            return await withTaskCancellationHandler {
                await withUnsafeContinuation(isolation: actor) { continuation in
                    lifetime.buffer.take(continuation)
                }
            } onCancel: {
                lifetime.stop()
            }
        }
    }
}

/// Owned by the iterator (and its copies): cancels the timer when the last of them is gone.
final class TickLifetime: Sendable {
    let buffer: TickBuffer
    private let service: any TimerService
    private let timer: TimerHandle?

    init(service: any TimerService, buffer: TickBuffer, timer: TimerHandle?) {
        self.service = service
        self.buffer = buffer
        self.timer = timer
    }

    deinit {
        self.stop()
    }

    /// Ends the iteration and cancels the timer (by its generation: never another timer).
    /// Idempotent.
    func stop() {
        self.buffer.end(dropWaiting: true)
        if let timer = self.timer {
            self.service.cancel(timer)
        }
    }
}

/// Captured by the timer's handler only; when the service releases the handler, the timer is
/// over and so is the iteration (a tick already waiting is still delivered).
private final class TickLink: Sendable {
    let buffer: TickBuffer

    init(_ buffer: TickBuffer) {
        self.buffer = buffer
    }

    deinit {
        self.buffer.end(dropWaiting: false)
    }
}

/// At most one waiting tick and at most one waiting consumer, under a lock. Continuations are
/// resumed outside it.
final class TickBuffer: Sendable {
    private struct State {
        var waiting: Tick?
        var consumer: UnsafeContinuation<Tick?, Never>?
        var ended = false
    }

    private let state = SemaphoreGuarded(State())

    /// From the handler: hands the tick to a waiting consumer, or keeps it (merged with the one
    /// already waiting).
    func deliver(_ tick: Tick) {
        let consumer = self.state.withLock { state -> UnsafeContinuation<Tick?, Never>? in
            guard !state.ended else { return nil }
            if let consumer = state.consumer {
                state.consumer = nil
                return consumer
            }
            state.waiting = state.waiting.map { Self.merge($0, into: tick) } ?? tick
            return nil
        }
        consumer?.resume(returning: tick)
    }

    /// From the consumer: returns the waiting tick at once, or `nil` at once when ended, or keeps
    /// the continuation for the next tick.
    func take(_ continuation: UnsafeContinuation<Tick?, Never>) {
        enum Outcome { case now(Tick?), suspended(stale: UnsafeContinuation<Tick?, Never>?) }
        let outcome = self.state.withLock { state -> Outcome in
            if let tick = state.waiting {
                state.waiting = nil
                return .now(tick)
            }
            if state.ended { return .now(nil) }
            // An iterator is used by one task at a time, so no consumer waits already; were one
            // to, it gets `nil` rather than being leaked.
            defer { state.consumer = continuation }
            return .suspended(stale: state.consumer)
        }
        switch outcome {
        case .now(let tick): continuation.resume(returning: tick)
        case .suspended(let stale): stale?.resume(returning: nil)
        }
    }

    /// No more ticks. `dropWaiting`: also forget a tick not yet taken (task cancelled, loop left).
    func end(dropWaiting: Bool) {
        let consumer = self.state.withLock { state -> UnsafeContinuation<Tick?, Never>? in
            state.ended = true
            if dropWaiting { state.waiting = nil }
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume(returning: nil)
    }

    /// One tick standing for both: the later one's identity and instants, and every period of
    /// both (`1 + missed` adds up).
    private static func merge(_ earlier: Tick, into later: Tick) -> Tick {
        let (sum, overflow) = earlier.missed.addingReportingOverflow(later.missed)
        let missed = overflow || sum == .max ? UInt64.max : sum + 1  // saturates, never traps
        return Tick(
            id: later.id, count: later.count, missed: missed,
            scheduledAt: later.scheduledAt, firedAt: later.firedAt, generation: later.generation,
            wallClockDeadline: later.wallClockDeadline, tolerance: later.tolerance)
    }
}
