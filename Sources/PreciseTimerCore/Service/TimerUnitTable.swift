/// What a unit shows in a listing: its identity, and its own view of its next elapse and last run.
package protocol TimerUnitRecord: AnyObject, Sendable {
    /// The unit's timer.
    var handle: TimerHandle { get }
    /// The next elapse on the wall clock, random delay included; `nil` while the handler runs or
    /// when no trigger elapses again.
    var nextElapse: WallClockInstant? { get }
    /// The last occurrence this process ran, or the store's last trigger, whichever is later.
    var lastTrigger: WallClockInstant? { get }
}

/// The units of one service, held weakly by ID (see ``TimerUnitHost``).
package final class TimerUnitTable: Sendable {
    /// A weak reference to a unit's state.
    private struct Entry {
        weak var record: (any TimerUnitRecord)?
    }

    /// The entries, and the count at which the next insert sweeps out the units that have gone.
    private struct Entries {
        var byID: [TimerID: Entry] = [:]
        var sweepAt = 64
    }

    /// When the service was created: the zero of `OnStartupSec=`.
    package let startedAt: MonotonicInstant
    private let entries = SemaphoreGuarded(Entries())

    package init(startedAt: MonotonicInstant) {
        self.startedAt = startedAt
    }

    /// Records a unit's state under its ID, replacing whatever was there. The entries of units
    /// that have gone are swept out when the table has doubled since the last sweep, so
    /// scheduling `n` units costs O(n) in all.
    package func insert(_ record: any TimerUnitRecord) {
        self.entries.withLock { entries in
            if entries.byID.count >= entries.sweepAt {
                entries.byID = entries.byID.filter { $0.value.record != nil }
                entries.sweepAt = max(64, entries.byID.count * 2)
            }
            entries.byID[record.handle.id] = Entry(record: record)
        }
    }

    /// The state of the unit under `id`, if it is still alive.
    package func record(for id: TimerID) -> (any TimerUnitRecord)? {
        self.entries.withLock { $0.byID[id]?.record }
    }

    /// How many entries the table holds, gone units not yet swept out included (for tests).
    package var entryCount: Int {
        self.entries.withLock { $0.byID.count }
    }
}
