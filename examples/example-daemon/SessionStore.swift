import PreciseTimer
import Synchronization

/// A fixed population of sessions, each with an idle-expiry one-shot timer on the sessions lane.
///
/// A touch pushes the session's expiry to `expiry` after the touch's arrival with
/// `reschedule(_:at:)` (one lock and one heap move, no new handler). A session left idle for
/// `expiry` expires: its handler counts it and
/// recreates it at once under the same ID (a new client takes its place), so the population stays
/// at `count` and the pending-timer count stays flat. All sessions are created at the same instant,
/// so every one that no touch reached expires at the same deadline: a bulk expiry of tens of
/// thousands of handlers, one after another on the lane's loop thread, every `expiry`.
final class SessionStore: Sendable {
    let count: Int
    private let lane: PreciseTimer
    /// Built once: a touch must not allocate a string.
    private let ids: [TimerID]
    private let expiryNanoseconds: Int64

    private let expiries = Atomic<Int>(0)
    private let touches = Atomic<Int>(0)
    /// Touches that found no timer to move (the session's expiry call had already begun).
    private let touchesTooLate = Atomic<Int>(0)
    /// The largest expiry lateness since the last ``takeExpiryLateness()``, in nanoseconds.
    private let maximumExpiryLateness = Atomic<Int64>(0)
    /// The largest expiry lateness of the whole run, in nanoseconds.
    private let worstExpiryLateness = Atomic<Int64>(0)
    /// Expiries that fired before their session had been idle for `expiry`: must stay 0.
    private let earlyExpiries = Atomic<Int>(0)
    /// Per session, the instant (nanoseconds on the lane's clock) its idle time counts from: its
    /// creation, or the arrival of its latest touch.
    ///
    /// A touch arrives up to a driver batch before it is applied, so its session may have expired
    /// and been recreated in between; counting from the later of the two keeps such a touch from
    /// pulling the new session's expiry before its creation + `expiry`. Touches (clients lane)
    /// and expiries (sessions lane) move the timer while holding this lock, so the check and the
    /// move are one step: a touch either moves the old timer before its call begins, finds its
    /// call begun (`reschedule` returns `false`), or sees the recreated session's instant.
    private let idleSince: Mutex<[Int64]>

    /// The expiries' tolerance (``TimerOptions/tolerance``): they share wake-ups within it.
    private let options: TimerOptions

    init(count: Int, expiry: Duration, tolerance: Duration, lane: PreciseTimer) {
        self.options = TimerOptions(tolerance: tolerance)
        self.count = count
        self.lane = lane
        self.expiryNanoseconds = expiry.wholeNanoseconds
        self.ids = (0..<count).map { TimerID("session-\($0)") }
        self.idleSince = Mutex([Int64](repeating: 0, count: count))
    }

    /// Creates every session, all due `expiry` from now.
    func open() throws {
        let now = self.lane.now.nanoseconds
        let deadline = MonotonicInstant(nanoseconds: now + self.expiryNanoseconds)
        try self.idleSince.withLock { idleSince in
            for index in 0..<self.count {
                idleSince[index] = now
                try self.arm(index, at: deadline)
            }
        }
    }

    private func arm(_ index: Int, at deadline: MonotonicInstant) throws {
        // Weak: the lane owns the handler and the store owns the lane.
        try self.lane.schedule(id: self.ids[index], at: deadline, options: self.options) { [weak self] tick in
            self?.expired(index, tick)
        }
    }

    /// Runs on the lane's loop thread.
    private func expired(_ index: Int, _ tick: Tick) {
        self.expiries.add(1, ordering: .relaxed)
        let lateness = tick.lateness.wholeNanoseconds
        if lateness > self.maximumExpiryLateness.load(ordering: .relaxed) {
            self.maximumExpiryLateness.store(lateness, ordering: .relaxed)  // one writer: the loop thread
        }
        if lateness > self.worstExpiryLateness.load(ordering: .relaxed) {
            self.worstExpiryLateness.store(lateness, ordering: .relaxed)
        }
        let firedAt = tick.firedAt.nanoseconds
        self.idleSince.withLock { idleSince in
            // `tick.lateness` is never negative by definition, so earliness is checked here, against
            // the session's own idle time (which also covers the deadline the timer answers).
            if firedAt - idleSince[index] < self.expiryNanoseconds {
                self.earlyExpiries.add(1, ordering: .relaxed)
            }
            // Recreated under the same ID (a fired one-shot's ID is free again inside its
            // handler). Only shutdown can make this fail, and then there is nothing left to expire.
            idleSince[index] = firedAt
            try? self.arm(index, at: MonotonicInstant(nanoseconds: firedAt + self.expiryNanoseconds))
        }
    }

    /// Marks session `index` active as of `arrival`, when its client touched it: its expiry moves
    /// to `expiry` after that (or after the session's creation, if it was recreated since).
    ///
    /// - Parameters:
    ///   - arrival: When the touch arrived; at most `now`.
    ///   - now: When the touch is applied. The deadline is never before it, so a driver stalled
    ///     for longer than `expiry` does not set deadlines in the past (which would fire at once
    ///     and count the stall as the expiry's lateness).
    func touch(_ index: Int, arrivedAt arrival: MonotonicInstant, appliedAt now: MonotonicInstant) {
        self.touches.add(1, ordering: .relaxed)
        let moved = self.idleSince.withLock { idleSince in
            let from = max(arrival.nanoseconds, idleSince[index])
            let deadline = MonotonicInstant(nanoseconds: max(from + self.expiryNanoseconds, now.nanoseconds))
            guard (try? self.lane.reschedule(self.ids[index], at: deadline)) ?? false else { return false }
            idleSince[index] = deadline.nanoseconds - self.expiryNanoseconds
            return true
        }
        if !moved {
            self.touchesTooLate.add(1, ordering: .relaxed)
        }
    }

    var expiryCount: Int { self.expiries.load(ordering: .relaxed) }
    var touchCount: Int { self.touches.load(ordering: .relaxed) }
    var lateTouchCount: Int { self.touchesTooLate.load(ordering: .relaxed) }
    /// Expiries that fired before their session had been idle for `expiry` (expected: 0).
    var earlyExpiryCount: Int { self.earlyExpiries.load(ordering: .relaxed) }
    /// Timers pending on the sessions lane (``PreciseTimer/scheduledCount``, O(1)).
    var pendingTimers: Int { self.lane.scheduledCount }

    /// The largest expiry lateness since the last call, and resets it.
    func takeExpiryLateness() -> Duration {
        .nanoseconds(self.maximumExpiryLateness.exchange(0, ordering: .relaxed))
    }

    /// The largest expiry lateness of the whole run.
    var worstExpiryLatenessSoFar: Duration {
        .nanoseconds(self.worstExpiryLateness.load(ordering: .relaxed))
    }
}
