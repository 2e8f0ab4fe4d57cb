/// Cancels a timer when it is released: an owner stores the token, and when the owner
/// deallocates, the timer is cancelled at once (not at its next fire).
///
/// ```swift
/// final class Cache: Sendable {
///     private let evictor: TimerToken
///     init(timers: PreciseTimer, store: Store) throws {
///         self.evictor = try timers.scheduleRepeating(every: .seconds(60)) { _ in store.evictExpired() }
///             .token(on: timers)
///     }
/// }
/// ```
///
/// The token holds the service weakly, so it never keeps a service alive; a token that outlives
/// its service does nothing. The handler must not capture the owner strongly, or the owner never
/// deallocates and the token is never released (capture what the handler needs instead, or use
/// the weak-target adapter).
///
/// - Important: the token cancels by ID. If the timer ended and a later timer was scheduled under
///   the same explicit ID, releasing the token cancels that later timer. Generated IDs are never
///   reused, so prefer them with tokens.
public final class TimerToken: Sendable {
    /// The timer this token cancels.
    public let id: TimerID
    private weak let service: (any TimerService)?

    /// Creates a token for a timer of `service`. Usually made with ``TimerID/token(on:)``.
    public init(id: TimerID, service: any TimerService) {
        self.id = id
        self.service = service
    }

    deinit {
        self.service?.cancel(self.id)
    }

    /// Cancels the timer now (``TimerService/cancel(_:)``'s guarantees). Idempotent.
    /// - Returns: `true` if the timer was still scheduled.
    @discardableResult
    public func cancel() -> Bool {
        self.service?.cancel(self.id) ?? false
    }
}

extension TimerID {
    /// A token that cancels this timer when it is released; see ``TimerToken``.
    ///
    /// - Parameter service: The service that scheduled the timer (held weakly).
    public func token(on service: any TimerService) -> TimerToken {
        TimerToken(id: self, service: service)
    }
}
