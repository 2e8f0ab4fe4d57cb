import Dispatch

/// Handler calls that have begun and not returned, on the loop (``TimerExecutor/loop``) or after
/// a hop to their queue (``TimerExecutor/queue(_:)``), counted so that a shutdown can wait for
/// them and tell whether one still runs (`PreciseTimer.shutdown(gracePeriod:)`).
///
/// A call is counted as it begins, under the registry's lock, in the same critical section as
/// ``ShardState/begin(_:onLoop:)``: once the registry is closed no call can begin, so from then on
/// the count only goes down, and reaching zero means every call has returned. A fire still
/// waiting in its queue is not counted: it can no longer begin, and it never runs its handler.
/// The loop counts its own calls once per pass (``TimerCore/runDue(notAfter:)``): the first as
/// it begins, under the lock, and the count is let go as the pass returns, so it covers the
/// pass's later calls too.
package final class InFlightCalls: Sendable {
    private let group = DispatchGroup()

    package init() {}

    /// A call (or the loop's pass of calls) begins. Cheap and non-blocking (one atomic add): it
    /// runs under the registry's lock.
    func enter() {
        self.group.enter()
    }

    /// The call (or the loop's pass) returned.
    func leave() {
        self.group.leave()
    }

    /// Runs `body` on `queue` once no call is in flight (at once if none is). Only meaningful
    /// after the core is closed: before, new calls may keep beginning.
    package func notify(queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        self.group.notify(queue: queue, execute: body)
    }

    /// Whether no call is in flight now.
    package var isEmpty: Bool {
        self.group.wait(timeout: .now()) == .success
    }
}
