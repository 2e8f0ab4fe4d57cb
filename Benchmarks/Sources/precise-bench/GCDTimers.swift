import Dispatch
import Synchronization

/// Raw Dispatch, the way a daemon wraps it by hand: one `DispatchSourceTimer` per timer on one
/// serial queue, kept in a dictionary under a lock so that it can be cancelled by ID.
///
/// This is the "idiomatic Dispatch" the `×GCD` columns compare with. `DispatchReferenceTimer`
/// no longer is: it now runs the shared scheduling core on one `DispatchSourceTimer` alarm, so
/// its rows show the core on Dispatch, and this one shows what Dispatch costs per timer.
final class GCDTimers: Sendable {
    /// A timer source; libdispatch sources are thread-safe, the protocol is just not marked so.
    private final class Source: @unchecked Sendable {
        let timer: any DispatchSourceTimer
        init(queue: DispatchQueue) { self.timer = DispatchSource.makeTimerSource(queue: queue) }
    }

    private struct State {
        var sources: [UInt64: Source] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "precise-bench.gcd")

    /// Creates a wrapper with its own serial queue.
    init() {}

    /// A one-shot: `handler` runs once, `delay` from now, on the serial queue.
    /// - Returns: The ID to cancel it with.
    @discardableResult
    func schedule(after delay: Duration, _ handler: @escaping @Sendable () -> Void) -> UInt64 {
        self.start(deadline: .now() + Self.interval(delay), repeating: nil) { [weak self] id in
            if self?.state.withLock({ $0.sources.removeValue(forKey: id) })?.timer.cancel() != nil {
                handler()
            }
        }
    }

    /// A repeating timer: first `first` from now, then every `interval` (Dispatch's own fixed-rate
    /// re-arming; it coalesces missed periods silently).
    @discardableResult
    func scheduleRepeating(
        every interval: Duration, startingAfter first: Duration, _ handler: @escaping @Sendable () -> Void
    ) -> UInt64 {
        self.start(deadline: .now() + Self.interval(first), repeating: Self.interval(interval)) { _ in handler() }
    }

    /// Cancels a timer.
    /// - Returns: Whether it was pending.
    @discardableResult
    func cancel(_ id: UInt64) -> Bool {
        guard let source = self.state.withLock({ $0.sources.removeValue(forKey: id) }) else { return false }
        source.timer.cancel()
        return true
    }

    private func start(
        deadline: DispatchTime, repeating: DispatchTimeInterval?, _ fired: @escaping @Sendable (UInt64) -> Void
    ) -> UInt64 {
        let source = Source(queue: self.queue)
        let id = self.state.withLock { state in
            state.nextID += 1
            state.sources[state.nextID] = source
            return state.nextID
        }
        source.timer.setEventHandler { fired(id) }
        if let repeating {
            source.timer.schedule(deadline: deadline, repeating: repeating, leeway: .nanoseconds(0))
        } else {
            source.timer.schedule(deadline: deadline, leeway: .nanoseconds(0))
        }
        source.timer.activate()
        return id
    }

    private static func interval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
