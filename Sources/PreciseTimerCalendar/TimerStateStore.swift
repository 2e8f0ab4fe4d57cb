import PreciseTimerCore

/// Where a unit's last trigger is kept, and who runs an occurrence.
///
/// systemd keeps a stamp per timer unit (`/var/lib/systemd/timers/stamp-*.timer`) so that
/// `Persistent=` knows after a restart what ran before it. A store does that for units run in
/// process, and more: it decides which caller runs an occurrence, so that processes sharing one
/// store never both run it. ``DirectoryTimerStateStore`` is the embedded default (one stamp file
/// per unit in a directory, exclusive between the processes of one host).
///
/// An occurrence runs at most once per store: a caller that is told `true` by
/// ``claim(_:of:)`` owns the occurrence; a caller told `false`, or given an error, does not run
/// it. The guarantee is at most once, not at least once: a process that dies after the claim and
/// before (or while) running the handler loses that occurrence.
public protocol TimerStateStore: Sendable {
    /// The last occurrence claimed for a unit, or `nil` when none ever was.
    ///
    /// - Parameter id: The unit's ID.
    /// - Returns: The occurrence of the latest successful ``claim(_:of:)`` for `id`, by any caller
    ///   sharing the store; `nil` when nothing was ever claimed for it.
    /// - Throws: When the store cannot be read.
    func lastTrigger(of id: TimerID) async throws -> WallClockInstant?

    /// Asks to run one occurrence of a unit.
    ///
    /// `true`: the caller runs this occurrence, and it becomes the unit's last trigger. At most one
    /// caller, across every process that shares the store, is ever told `true` for one
    /// (`id`, `occurrence`).
    ///
    /// - Parameters:
    ///   - occurrence: The elapse the caller is about to run (the schedule's instant, not the
    ///     time of the call), so that every process names it alike.
    ///   - id: The unit's ID.
    /// - Returns: `true` when the caller runs the occurrence; `false` when it is not the caller's
    ///   to run (already claimed, or not after the unit's last trigger).
    /// - Throws: When the store cannot decide; the caller must not run the occurrence then.
    func claim(_ occurrence: WallClockInstant, of id: TimerID) async throws -> Bool

    /// Whether processes on several machines share this store; `false` unless the store says so.
    ///
    /// A unit with `FixedRandomDelay=` scheduled with a store that answers `true` gets one delay
    /// for the unit alone, the same on every machine (see ``TimerUnit/fixedRandomDelay``), so the
    /// processes of a fleet agree on when an occurrence elapses and one of them claims it.
    var isSharedAcrossMachines: Bool { get }
}

extension TimerStateStore {
    /// `false`: the store is one machine's (a directory). A store shared by a fleet (a database)
    /// implements the requirement and returns `true`, so that `FixedRandomDelay=` is per unit, the
    /// machine ID left out (as if it were all zeros); with `false` it is per (machine, unit), as
    /// systemd's.
    public var isSharedAcrossMachines: Bool { false }
}
