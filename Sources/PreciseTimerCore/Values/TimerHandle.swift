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
    /// The timer's ID. A generated one (`timer-<generation>`) is not stored: it is built from
    /// the generation when read.
    public var id: TimerID { self.storedID ?? TimerID(generatedNumber: self.generation) }
    /// The timer's generation: unique among the timers its service has scheduled (see
    /// ``Tick/generation``).
    public let generation: UInt64

    /// Where the service that scheduled the timer keeps it (its node's address), or 0: a hint
    /// that spares `cancel(handle)` the look-up by ID. The service compares it with the addresses
    /// it holds and reads a timer there only when it finds it, so a stale or foreign hint is
    /// never dereferenced (see ``TimerTable/slot(ofNodeAt:hash:)``). Not part of the identity:
    /// equality and hashing ignore it.
    package let location: UInt

    /// The ID, unless it is the generated `timer-<generation>` (`nil`): a timer scheduled without
    /// an ID hands out its handle without building that string, and a cancel by handle hashes
    /// its number without parsing one (``tableHash``).
    private let storedID: TimerID?

    /// Creates a handle. Services create these; tests and adapters may too.
    public init(id: TimerID, generation: UInt64) {
        self.init(id: id, generation: generation, location: 0)
    }

    /// A handle with the ``location`` of its timer, as the service that schedules it hands out.
    package init(id: TimerID, generation: UInt64, location: UInt) {
        self.storedID = id.canonicalGeneratedNumber == generation ? nil : id
        self.generation = generation
        self.location = location
    }

    /// The handle of a timer named by its generation (`timer-<generation>`), at `location`.
    package init(generatedBy generation: UInt64, location: UInt) {
        self.storedID = nil
        self.generation = generation
        self.location = location
    }

    /// The ID's ``TimerID/tableHash``, computed from the generation for a generated ID.
    @inline(__always)
    package var tableHash: UInt64 {
        if let storedID = self.storedID { return storedID.tableHash }
        return TimerID.tableHash(generatedNumber: self.generation) ?? self.id.tableHash
    }

    /// Whether both name the same timer: the same ID and generation.
    public static func == (lhs: TimerHandle, rhs: TimerHandle) -> Bool {
        // A generated ID is stored by neither (it is `timer-<generation>` for both), a chosen one
        // by both: comparing what is stored compares the IDs.
        lhs.generation == rhs.generation && lhs.storedID == rhs.storedID
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.generation)
        hasher.combine(self.storedID)
    }

    /// `id#generation`, e.g. `heartbeat#12`.
    public var description: String { "\(self.id)#\(self.generation)" }
}
