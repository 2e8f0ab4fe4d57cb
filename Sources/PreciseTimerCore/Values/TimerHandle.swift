/// One timer's identity: its ID and the generation its service gave it when it was scheduled.
///
/// An ID names a timer only while it is scheduled: once a one-shot has fired or a timer was
/// cancelled, the same explicit ID may be scheduled again. A handle names exactly one timer, so
/// cancelling by handle never ends a newer timer that reused the ID. Every adapter in this
/// package (tokens, sleeps, tick sequences, `execTask`, the weak-target adapter) holds a handle,
/// taken from ``TimerService/scheduleTimer(_:id:options:_:)`` as the timer is registered, never
/// looked up afterwards.
///
/// ```swift
/// let handle = try timers.scheduleTimer(.after(.seconds(30)), id: "session-7") { _ in expire() }
/// // …later, even if "session-7" expired and was scheduled again meanwhile:
/// timers.cancel(handle)  // ends this timer only
/// ```
public struct TimerHandle: Hashable, Sendable, CustomStringConvertible {
    /// The timer's ID.
    public let id: TimerID
    /// The timer's generation: unique among the timers its service has scheduled (see
    /// ``Tick/generation``).
    public let generation: UInt64

    /// Creates a handle. Services create these; tests and adapters may too.
    public init(id: TimerID, generation: UInt64) {
        self.id = id
        self.generation = generation
    }

    /// `id#generation`, e.g. `heartbeat#12`.
    public var description: String { "\(self.id)#\(self.generation)" }
}
