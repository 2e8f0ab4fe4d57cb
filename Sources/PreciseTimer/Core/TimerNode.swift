import Dispatch

/// One scheduled timer: what it runs, and where it is in its life.
///
/// Nodes are shared between the registry, the heap and a fire in flight, so this is a class;
/// it stays small (no per-timer libevent event) because a daemon may hold a million of them.
package final class TimerNode: @unchecked Sendable {
    // Invariant: every `var` is read and written only under the registry's semaphore, except
    // `handler` of a node that `cancelAll` swapped out (see ``TimerRegistry/Swept``).

    package enum State: UInt8 {
        /// In the heap (one live entry, the one stamped with the node's `epoch`), waiting for its
        /// deadline.
        case pending
        /// Popped as due; its call is about to begin (possibly after a hop to its queue). Still
        /// registered, so a `cancel`, `pause` or `reschedule` now still prevents the call.
        case taken
        /// Its handler is being called (repeating timers only: a one-shot ends as its call begins).
        case running
        /// Paused: registered, not in the heap; `deadline` holds the time it had left.
        case paused
        /// Fired (one-shot), cancelled or shut down. May linger in the heap as garbage.
        case ended
    }

    /// Set once, before the node is shared (a generated name may be redrawn on a clash).
    package var id: TimerID
    package var handler: (@Sendable (Tick) -> Void)?
    /// Nanoseconds between deadlines; 0 for a one-shot.
    package let interval: Int64
    /// `nil`: run on the loop.
    package let queue: DispatchQueue?
    /// Pending: the next deadline. Taken or running: the deadline the call answers, from which
    /// the next one is computed. Paused: the nanoseconds it had left.
    package var deadline: Int64
    /// The order among equal deadlines, drawn once when the timer is scheduled and kept for its
    /// whole life; also its generation (``Tick/generation``), never given to another timer.
    package var sequence: UInt64 = 0
    package var count: UInt64 = 0
    /// The ID's ``TimerID/tableHash``, set with `id`: it picks the node's shard and table slot,
    /// so the loop never hashes a string to find them again.
    package var hash: UInt64 = 0
    /// Set by `reschedule` while the handler runs: the next deadline, used when the call returns.
    package var rescheduledTo: Int64?
    /// Bumped whenever the node's heap entry or a fire already taken becomes stale (reschedule,
    /// pause): only the entry and the fire stamped with the current epoch may start a call.
    package var epoch: UInt32 = 0
    /// The registry's era when it was scheduled; an older era means ended by `cancelAll` or
    /// `close`, whatever `state` says (see ``TimerRegistry/cancelAll()``).
    package var era: UInt32 = 0
    package let policy: MissedTickPolicy
    package var state: State = .pending
    /// Set by `pause` while the handler runs: the timer parks when the call returns.
    package var pauseWhenDone = false
    /// `.burst` catch-up calls made in a row (see ``MissedTickPolicy/maximumBurst``).
    package var catchUp: UInt8 = 0
    // Fields are ordered so the node is 120 bytes (a 128-byte malloc chunk): a million pending
    // timers is a normal load.

    package init(
        id: TimerID, deadline: Int64, interval: Int64, options: TimerOptions,
        handler: @escaping @Sendable (Tick) -> Void
    ) {
        self.id = id
        self.deadline = deadline
        self.interval = interval
        self.policy = options.missedTicks
        switch options.executor {
        case .loop: self.queue = nil
        case .queue(let queue): self.queue = queue
        }
        self.handler = handler
    }

    /// Gives the node its ID (and that ID's hash), before it is registered.
    @inline(__always)
    package func name(_ id: TimerID) {
        self.id = id
        self.hash = id.tableHash
    }
}
