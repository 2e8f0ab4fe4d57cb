/// What a handler is told at every fire.
///
/// Instants are on ``MonotonicInstant``'s clock (`CLOCK_MONOTONIC`). `firedAt` is a fresh clock
/// read taken just before the handler is called, never an event loop's cached time.
public struct Tick: Sendable, Hashable, CustomStringConvertible {
    /// The timer that fired.
    public var id: TimerID { self.storedID ?? TimerID(generatedNumber: self.generation) }
    /// The ID, or `nil` for a service's generated one, `timer-<generation>`, built when ``id`` is
    /// read: a fire builds no string for a handler that never reads it.
    private let storedID: TimerID?
    /// 1 for the first call of this timer's handler, +1 per call.
    public let count: UInt64
    /// Whole periods skipped just before this call (0 when on time). ``MissedTickPolicy/skip``
    /// and ``MissedTickPolicy/delay`` skip periods; ``MissedTickPolicy/burst`` calls once per
    /// period, and skips only when still behind after ``MissedTickPolicy/maximumBurst`` calls.
    public let missed: UInt64
    /// The deadline this call answers: `start + k·interval` for a repeating timer.
    public let scheduledAt: MonotonicInstant
    /// When the handler was called (a fresh clock read).
    public let firedAt: MonotonicInstant
    /// Which timer, exactly: a number the service gave this timer when it was scheduled, never
    /// given to another of its timers. `cancel(_ tick:)` uses it, so a handler
    /// that cancels itself never ends a newer timer that reused its explicit ID.
    public let generation: UInt64
    /// For a wall-clock timer, the occurrence this call answers (the instant given to
    /// ``TimerService/schedule(id:atWallClock:options:_:)``, or the schedule's occurrence);
    /// `nil` for a timer on the monotonic or continuous clock, and for a calendar timer's call
    /// that a `reschedule` moved (it answers no occurrence). ``scheduledAt`` is then where that
    /// occurrence fell on the monotonic clock, so ``lateness`` is measured against it.
    public let wallClockDeadline: WallClockInstant?

    /// How late this call was allowed to be: the part of its ``TimerOptions/tolerance`` the
    /// service used to share wake-ups (the step of the coalescing grid: at most the tolerance
    /// asked for, and at most half a repeating timer's interval). `.zero` for a precise timer.
    public let tolerance: Duration

    /// Where the service keeps the timer (its ``TimerHandle/location``), or 0 for a tick made
    /// with the public initializer: ``handle`` carries it, so a handler that cancels itself by
    /// `tick.handle` skips the look-up by ID. Not part of the tick's value (`==` and hashing
    /// ignore it).
    private let location: UInt

    /// Creates a tick. Services make ticks; tests and adapters may too.
    public init(
        id: TimerID, count: UInt64, missed: UInt64, scheduledAt: MonotonicInstant,
        firedAt: MonotonicInstant, generation: UInt64 = 0, wallClockDeadline: WallClockInstant? = nil,
        tolerance: Duration = .zero
    ) {
        self.storedID = id
        self.count = count
        self.missed = missed
        self.scheduledAt = scheduledAt
        self.firedAt = firedAt
        self.generation = generation
        self.wallClockDeadline = wallClockDeadline
        self.tolerance = tolerance
        self.location = 0
    }

    /// A service's tick for the timer `node`: its ID built only when read, for a generated one.
    @inline(__always)
    package init(
        of node: TimerNode, count: UInt64, missed: UInt64, scheduledAt: MonotonicInstant, firedAt: MonotonicInstant,
        wallClockDeadline: WallClockInstant?, tolerance: Duration
    ) {
        self.storedID = node.isNamedBySequence ? nil : node.id
        self.count = count
        self.missed = missed
        self.scheduledAt = scheduledAt
        self.firedAt = firedAt
        self.generation = node.sequence
        self.wallClockDeadline = wallClockDeadline
        self.tolerance = tolerance
        self.location = UInt(bitPattern: Unmanaged.passUnretained(node).toOpaque())
    }

    /// Whether two ticks are the same in every field, the ID compared as a ``TimerID`` however
    /// each tick keeps it.
    public static func == (lhs: Tick, rhs: Tick) -> Bool {
        lhs.generation == rhs.generation && lhs.count == rhs.count && lhs.missed == rhs.missed
            && lhs.scheduledAt == rhs.scheduledAt && lhs.firedAt == rhs.firedAt
            && lhs.wallClockDeadline == rhs.wallClockDeadline && lhs.tolerance == rhs.tolerance && lhs.id == rhs.id
    }

    /// Hashes every field, the ID as a ``TimerID`` (equal ticks hash alike).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.id)
        hasher.combine(self.count)
        hasher.combine(self.missed)
        hasher.combine(self.scheduledAt)
        hasher.combine(self.firedAt)
        hasher.combine(self.generation)
        hasher.combine(self.wallClockDeadline)
        hasher.combine(self.tolerance)
    }

    /// The identity of the timer that produced this tick: ``TimerService/cancel(_:)-(TimerHandle)``
    /// with it ends exactly that timer, never a later one that reused its explicit ID (a handler
    /// that cancels itself: `timers.cancel(tick.handle)`).
    public var handle: TimerHandle {
        guard let storedID = self.storedID else {
            return TimerHandle(generatedBy: self.generation, location: self.location)
        }
        return TimerHandle(id: storedID, generation: self.generation, location: self.location)
    }

    /// `firedAt - scheduledAt`: how late the handler was called. Never negative, because no
    /// timer fires before its deadline.
    public var lateness: Duration { max(.zero, self.firedAt - self.scheduledAt) }

    /// How late the handler was called beyond its ``tolerance``: the part of ``lateness`` the
    /// timer did not ask for. What to alert on when precise and tolerant timers share a service
    /// (for a precise timer it is ``lateness``).
    public var excessLateness: Duration { max(.zero, self.lateness - self.tolerance) }

    /// A one-line summary for logs.
    public var description: String {
        "Tick(\(self.id) #\(self.count), missed \(self.missed), late \(self.lateness))"
    }
}
