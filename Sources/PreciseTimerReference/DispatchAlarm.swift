import Dispatch
import Glibc
import PreciseTimerCore

/// Dispatch's engine for a ``TimerCore``: one `DispatchSourceTimer` on a serial queue, armed at
/// the earliest deadline, and a doorbell that asks the queue to look at the heap again.
final class DispatchAlarm: TimerDriver, @unchecked Sendable {
    // Unchecked: `source` is a DispatchSourceTimer, documented thread-safe but not `Sendable`;
    // `state` is guarded by its semaphore; `queue` is Sendable; `armedBoundVersion` is touched on
    // `queue` only.
    private struct State {
        /// The core this alarm drives; `nil` once stopped. Holding it here (and not the other
        /// way round only) is a cycle, broken by ``stop()``, which the service's `deinit` calls.
        var core: TimerCore?
        /// A `run` is already queued: more rings before it runs change nothing.
        var runQueued = false
    }

    /// The ``TimerCore/boundVersion`` the wall-clock source was last armed for (queue only).
    private var armedBoundVersion: UInt64 = .max

    private let queue: DispatchQueue
    private let source: any DispatchSourceTimer
    /// Armed on Dispatch's wall time (`CLOCK_REALTIME`) at the earliest wall-clock deadline: when
    /// it fires, the core re-estimates its wall-clock timers (``TimerCore/rebase()``), so a
    /// deadline reached early or late against the monotonic estimate (NTP slewing, a step across
    /// it, a suspend) fires on the wall clock. Dispatch cannot report a step that crosses no
    /// deadline, so between two wall-clock deadlines a step is seen only when the next one comes.
    private let wallSource: any DispatchSourceTimer
    private let state = SemaphoreGuarded(State())

    init(queue: DispatchQueue) {
        self.queue = queue
        self.source = DispatchSource.makeTimerSource(queue: queue)
        self.wallSource = DispatchSource.makeTimerSource(queue: queue)
    }

    /// Starts driving `core`: the source fires `run` at every deadline it is armed for.
    func start(driving core: TimerCore) {
        self.state.withLock { $0.core = core }
        self.source.setEventHandler { [weak self] in self?.run() }
        self.source.schedule(deadline: .distantFuture, leeway: .nanoseconds(0))
        self.source.activate()
        self.wallSource.setEventHandler { [weak self] in
            guard let self, let core = self.state.withLock({ $0.core }) else { return }
            core.rebase()
            self.run()
        }
        self.wallSource.schedule(wallDeadline: .distantFuture, leeway: .nanoseconds(0))
        self.wallSource.activate()
    }

    /// Stops for good: no `run` starts afterwards, the source is cancelled and the core let go.
    /// Never waits (safe from a handler on the queue).
    func stop() {
        let core = self.state.withLock { state -> TimerCore? in
            defer { state.core = nil }
            return state.core
        }
        guard core != nil else { return }
        self.source.cancel()
        self.wallSource.cancel()
    }

    func now() -> Int64 { MonotonicInstant.now().nanoseconds }

    func wake() {
        let enqueue = self.state.withLock { state -> Bool in
            guard state.core != nil, !state.runQueued else { return false }
            state.runQueued = true
            return true
        }
        if enqueue {
            self.queue.async { [weak self] in self?.run() }
        }
    }

    /// On the queue: runs what is due, then arms the source at the next deadline.
    private func run() {
        guard
            let core = self.state.withLock({ state -> TimerCore? in
                state.runQueued = false
                return state.core
            })
        else { return }
        switch core.runDue() {
        case .idle(let deadline):
            // The same clock on Linux: `DispatchTime.uptimeNanoseconds` is CLOCK_MONOTONIC.
            self.source.schedule(
                deadline: DispatchTime(uptimeNanoseconds: UInt64(deadline)), leeway: .nanoseconds(0))
        case .empty:
            self.source.schedule(deadline: .distantFuture, leeway: .nanoseconds(0))
        case .batchLimitReached:
            self.wake()  // Let the queue serve other work, then go on.
        }
        self.armWallSource(core)
    }

    /// Re-arms the wall-clock source when a wall-clock timer came, went or moved (queue only).
    private func armWallSource(_ core: TimerCore) {
        let version = core.boundVersion
        guard version != self.armedBoundVersion else { return }
        self.armedBoundVersion = version
        guard let wall = core.earliestBoundDeadlines().wall else {
            self.wallSource.schedule(wallDeadline: .distantFuture, leeway: .nanoseconds(0))
            return
        }
        let seconds = wall >= 0 ? wall / 1_000_000_000 : (wall + 1) / 1_000_000_000 - 1
        let spec = timespec(tv_sec: Int(seconds), tv_nsec: Int(wall - seconds * 1_000_000_000))
        self.wallSource.schedule(wallDeadline: DispatchWallTime(timespec: spec), leeway: .nanoseconds(0))
    }
}
