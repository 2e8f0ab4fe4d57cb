import Dispatch
import PreciseTimer

/// What the scale probes (cost, memory, storm, idle, concurrent) ask of a service, so that one
/// loop measures a ``TimerService`` and raw Dispatch (``GCDTimers``) alike.
protocol ScaleService: Sendable {
    /// What cancels one timer.
    associatedtype Handle: Sendable

    /// A one-shot `delay` from now.
    @discardableResult
    func oneShot(after delay: Duration, _ body: @escaping @Sendable () -> Void) throws -> Handle

    /// Cancels a pending timer; `false` when it was not pending.
    func cancel(_ handle: Handle) -> Bool

    /// A repeating timer on the grid `first + k·interval` (`CLOCK_MONOTONIC` nanoseconds). `body`
    /// gets the periods skipped before the call when the service reports them, `nil` otherwise.
    func repeating(every interval: Int64, first: Int64, _ body: @escaping @Sendable (_ missed: UInt64?) -> Void) throws

    /// The object that keeps the service alive.
    var keepAlive: AnyObject { get }
}

extension ScaleService {
    /// Waits until the service has caught up with everything asked of it so far: a one-shot due
    /// now fires only after the service has taken in the earlier requests.
    func settle() throws {
        let fired = DispatchSemaphore(value: 0)
        try self.oneShot(after: .zero) { fired.signal() }
        guard fired.wait(timeout: .now() + .seconds(60)) == .success else {
            throw BenchmarkSkip(reason: "the service did not settle within 60 s")
        }
    }
}

/// A ``TimerService`` as a ``ScaleService``: the calls a daemon makes, with default options.
struct TimerServiceScale: ScaleService {
    /// The service measured.
    let timers: any TimerService

    @discardableResult
    func oneShot(after delay: Duration, _ body: @escaping @Sendable () -> Void) throws -> TimerID {
        try self.timers.schedule(after: delay) { _ in body() }
    }

    func cancel(_ handle: TimerID) -> Bool {
        self.timers.cancel(handle)
    }

    func repeating(every interval: Int64, first: Int64, _ body: @escaping @Sendable (UInt64?) -> Void) throws {
        try self.timers.scheduleRepeating(
            every: .nanoseconds(interval), startingAt: MonotonicInstant(nanoseconds: first)
        ) { tick in body(tick.missed) }
    }

    var keepAlive: AnyObject { self.timers }
}

extension GCDTimers: ScaleService {
    func oneShot(after delay: Duration, _ body: @escaping @Sendable () -> Void) throws -> UInt64 {
        self.schedule(after: delay, body)
    }

    func repeating(every interval: Int64, first: Int64, _ body: @escaping @Sendable (UInt64?) -> Void) throws {
        self.scheduleRepeating(
            every: .nanoseconds(interval), startingAfter: .nanoseconds(max(first - Measure.now(), 0))
        ) {
            body(nil)
        }
    }

    var keepAlive: AnyObject { self }
}
