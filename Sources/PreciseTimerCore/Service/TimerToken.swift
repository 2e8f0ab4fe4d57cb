/// Cancels a timer when it is released: an owner stores the token, and when the owner
/// deallocates, the timer is cancelled at once (not at its next fire).
///
/// ```swift
/// final class Cache: Sendable {
///     private let evictor: TimerToken
///     init(timers: PreciseTimer, store: Store) throws {
///         self.evictor = try timers.scheduleTimer(.every(.seconds(60))) { _ in store.evictExpired() }
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
/// Releasing a token only calls ``TimerService/cancel(_:)-(TimerHandle)``, so it is safe on any thread and
/// inside any handler, and gives the same guarantee: once the release returns, the handler never
/// starts again (a call already running on another thread may finish).
///
/// The token cancels exactly one timer: the one its ``TimerHandle`` names (``TimerHandle/token(on:)``),
/// so if that timer ended and a later one reused the explicit ID, releasing the token leaves the
/// later one alone. A token made from an ID alone (``TimerID/token(on:)``) names the timer
/// scheduled under that ID when the token is made, which for an explicit ID may already be a
/// newer timer if the first one ended in between: make tokens from handles.
public final class TimerToken: Sendable {
    /// The timer this token cancels.
    public let id: TimerID
    /// The timer's generation when the token was made; `nil` if no timer had the ID then (the
    /// token then does nothing).
    public let generation: UInt64?
    /// The handle's ``TimerHandle/location`` (0 when made from an ID).
    private let location: UInt
    private weak let service: (any TimerService)?

    /// Creates a token for exactly the timer `handle` names. Usually made with
    /// ``TimerHandle/token(on:)``.
    public init(_ handle: TimerHandle, service: any TimerService) {
        self.id = handle.id
        self.generation = handle.generation
        self.location = handle.location
        self.service = service
    }

    /// Creates a token for the timer now scheduled under `id` on `service` (its generation is
    /// looked up now; prefer ``init(_:service:)`` with the handle the timer was scheduled with).
    @available(*, deprecated, message: "Use TimerToken(_:service:) with the TimerHandle that scheduleTimer returns")
    public init(id: TimerID, service: any TimerService) {
        self.id = id
        self.generation = service.generation(of: id)
        self.location = 0
        self.service = service
    }

    deinit {
        self.cancel()
    }

    /// Cancels the timer now (``TimerService/cancel(_:)-(TimerHandle)``'s guarantees). Idempotent.
    /// - Returns: `true` if the timer was still scheduled.
    @discardableResult
    public func cancel() -> Bool {
        guard let generation = self.generation, let service = self.service else { return false }
        return service.cancel(TimerHandle(id: self.id, generation: generation, location: self.location))
    }
}
