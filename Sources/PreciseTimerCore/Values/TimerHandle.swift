/// One timer's identity: its ID and the generation its service gave it when it was scheduled.
///
/// An ID names a timer only while it is scheduled: once a one-shot has fired or a timer was
/// cancelled, the same explicit ID may be scheduled again. A handle names exactly one timer, so
/// cancelling by handle never ends a newer timer that reused the ID. Every adapter in this
/// package (tokens, sleeps, tick sequences, `execTask`, the weak-target adapter) holds a handle,
/// taken from ``TimerService/scheduleTimer(_:id:options:_:)`` as the timer is registered, never
/// looked up afterwards.
///
/// A handle belongs to the service that scheduled its timer: given to another service, it names
/// no timer there you can count on. Besides its identity, a handle from `scheduleTimer` carries
/// where its service keeps the timer, so a cancel by handle does not look the ID up; a handle
/// built with ``init(id:generation:)`` is looked up by its ID and generation.
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

    /// Where the service that scheduled the timer keeps it (its node's address), or 0: a hint
    /// that spares `cancel(handle)` the look-up by ID. The service compares it with the addresses
    /// it holds and reads a timer there only when it finds it, so a stale or foreign hint is
    /// never dereferenced (see ``TimerTable/slot(ofNodeAt:hash:)``). Not part of the identity:
    /// equality and hashing ignore it.
    package let location: UInt

    /// Creates a handle. Services create these; tests and adapters may too.
    public init(id: TimerID, generation: UInt64) {
        self.init(id: id, generation: generation, location: 0)
    }

    /// A handle with the ``location`` of its timer, as the service that schedules it hands out.
    package init(id: TimerID, generation: UInt64, location: UInt) {
        self.id = id
        self.generation = generation
        self.location = location
    }

    /// Whether both name the same timer: the same ID and generation.
    public static func == (lhs: TimerHandle, rhs: TimerHandle) -> Bool {
        lhs.generation == rhs.generation && lhs.id == rhs.id
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.id)
        hasher.combine(self.generation)
    }

    /// `id#generation`, e.g. `heartbeat#12`.
    public var description: String { "\(self.id)#\(self.generation)" }
}
