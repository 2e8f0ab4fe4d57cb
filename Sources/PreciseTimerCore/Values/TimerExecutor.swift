import Dispatch

/// Where a timer's handler runs. Whatever the executor, a timer's handler never runs
/// concurrently with itself: the next period is armed only after the previous call returned.
public enum TimerExecutor: Sendable {
    /// On the service's timer thread: the lowest latency.
    ///
    /// - Important: the handler must not block. While it runs, no other timer of the service
    ///   fires; periods that pass meanwhile are handled by each timer's ``MissedTickPolicy``.
    case loop
    /// Hop to a queue (one `async` per fire). A concurrent queue is fine: calls of one timer
    /// still never overlap.
    case queue(DispatchQueue)
}
