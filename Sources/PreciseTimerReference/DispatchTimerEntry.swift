import Dispatch
import PreciseTimer

/// One timer of a ``DispatchReferenceTimer``: its `DispatchSourceTimer` and where it is in its life.
final class DispatchTimerEntry: @unchecked Sendable {
    // Invariant: every `var` is read and written only under the service's semaphore; the source
    // is thread-safe.

    enum State {
        /// Armed; its next event may start a call.
        case pending
        /// A call (or a burst of calls) is under way.
        case running
        /// Fired (one-shot), cancelled or shut down.
        case ended
    }

    let id: TimerID
    /// Nanoseconds between deadlines; 0 for a one-shot.
    let interval: Int64
    let policy: MissedTickPolicy
    /// `nil`: run on the service's serial queue.
    let queue: DispatchQueue?
    let source: any DispatchSourceTimer

    var handler: (@Sendable (Tick) -> Void)?
    var state: State = .pending
    /// The source is suspended while a call runs on another queue (no overlap); a suspended
    /// source must be resumed before it is released, or libdispatch crashes.
    var isSuspended = false
    /// Calls so far.
    var count: UInt64 = 0
    /// The grid's origin: the first deadline, or the restart instant under `.delay`.
    var origin: Int64
    /// Grid points that have passed since `origin` (the sum of the source's `data`).
    var elapsedPeriods: UInt64 = 0

    init(
        id: TimerID, deadline: Int64, interval: Int64, options: TimerOptions, source: any DispatchSourceTimer,
        handler: @escaping @Sendable (Tick) -> Void
    ) {
        self.id = id
        self.origin = deadline
        self.interval = interval
        self.policy = options.missedTicks
        switch options.executor {
        case .loop: self.queue = nil
        case .queue(let queue): self.queue = queue
        }
        self.source = source
        self.handler = handler
    }

    /// Arms the source at `deadline`, then every interval (or once).
    func arm(at deadline: Int64) {
        let start = DispatchTime(uptimeNanoseconds: UInt64(deadline))
        if self.interval > 0 {
            self.source.schedule(deadline: start, repeating: .nanoseconds(Int(self.interval)), leeway: .nanoseconds(0))
        } else {
            self.source.schedule(deadline: start, repeating: .never, leeway: .nanoseconds(0))
        }
    }
}
