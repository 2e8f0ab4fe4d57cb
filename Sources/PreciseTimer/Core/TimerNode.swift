import Dispatch

/// One scheduled timer: what it runs, and where it is in its life.
///
/// Nodes are shared between the registry, the heap and a fire in flight, so this is a class;
/// it stays small (no per-timer libevent event) because a daemon may hold a million of them.
package final class TimerNode: @unchecked Sendable {
    // Invariant: every `var` is read and written only under the registry's semaphore.

    package enum State: UInt8 {
        /// In the heap, waiting for its deadline.
        case pending
        /// Popped as due; its call is about to begin (possibly after a hop to its queue). Still
        /// registered, so a `cancel` now still prevents the call.
        case taken
        /// Its handler is being called. Not in the heap.
        case running
        /// Fired (one-shot), cancelled or shut down. May linger in the heap as garbage.
        case ended
    }

    /// Set once, before the node is shared (a generated name may be redrawn on a clash).
    package var id: TimerID
    /// Nanoseconds between deadlines; 0 for a one-shot.
    package let interval: Int64
    package let policy: MissedTickPolicy
    /// `nil`: run on the loop.
    package let queue: DispatchQueue?

    package var handler: (@Sendable (Tick) -> Void)?
    /// The next deadline (pending), or the base the next one is computed from (running).
    package var deadline: Int64
    package var count: UInt64 = 0
    package var state: State = .pending

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
}
