import PreciseTimer
import Synchronization

/// The daemon's clients: touches random sessions at `rate` per second, from a repeating
/// PreciseTimer timer on a lane of its own (the "clients" lane), in a batch every millisecond.
///
/// The lane stands for the clients' network traffic, not for the daemon's timers, so it stays
/// separate from the sessions and heartbeat lanes whatever `--single-lane` says. A timer rather
/// than a `Task.sleep` loop: a millisecond sleep goes through Dispatch's manager thread and the
/// cooperative pool at every wake-up, which cost more CPU than the sessions lane it was meant to
/// exercise.
///
/// Each batch catches up on the schedule (touch `n` is due once rate × elapsed reaches `n`), so a
/// late wake-up does not lower the rate; each touch of a batch keeps its own arrival instant
/// (see ``drive(until:)``).
final class TouchDriver: Sendable {
    /// How often the driver wakes up to apply the touches due since its last wake-up.
    static let batchInterval: Duration = .milliseconds(1)
    private static let timerID: TimerID = "touches"

    private let store: SessionStore
    private let lane: PreciseTimer
    private let schedule: TouchSchedule?

    private struct State {
        /// When the driver started, on the lanes' monotonic clock.
        var start = MonotonicInstant(nanoseconds: 0)
        /// Touches applied so far.
        var done = 0
        var random = SplitMix64(seed: 0x5EED)
    }
    /// Only the clients lane's loop thread uses it once the driver runs (a timer's handler never
    /// runs concurrently with itself); the lock is for the compiler, and uncontended.
    private let state = Mutex(State())

    /// - Parameters:
    ///   - rate: Touches per second; 0 for none.
    ///   - lane: The clients lane the driver's timer runs on.
    init(store: SessionStore, rate: Int, lane: PreciseTimer) {
        self.store = store
        self.lane = lane
        self.schedule = rate > 0 ? TouchSchedule(rate: rate) : nil
    }

    /// Starts touching: the schedule counts from now.
    func start() throws {
        guard self.schedule != nil else { return }
        let start = self.lane.now
        self.state.withLock { $0.start = start }
        // Weak: the lane owns the handler, and the driver is owned by the session service.
        try self.lane.scheduleRepeating(id: Self.timerID, every: Self.batchInterval) { [weak self] tick in
            self?.drive(until: tick.firedAt)
        }
    }

    /// Stops touching; once it returns no batch begins (one already running may finish).
    func stop() {
        self.lane.cancel(Self.timerID)
    }

    /// Applies every touch due by `now`, each as arriving at its own instant on the schedule.
    ///
    /// A real server's clients touch at independent instants; batching them into one wake-up a
    /// millisecond is this simulator's artifact. Stamping a whole batch with the wake-up's time
    /// would make all its expiries due within microseconds of each other, so they would share a
    /// sessions-lane wake-up even with no tolerance, and `--expiry-tolerance` would seem to save
    /// less than it does. So touch `n` counts as arriving at start + n / rate, an instant within
    /// the interval this batch covers (after the previous wake-up, not after `now`), and its
    /// session's expiry counts from there.
    private func drive(until now: MonotonicInstant) {
        guard let schedule = self.schedule else { return }
        self.state.withLock { state in
            let due = schedule.touchesDue(afterNanoseconds: now.nanoseconds - state.start.nanoseconds)
            while state.done < due {
                state.done += 1
                let arrival = MonotonicInstant(
                    nanoseconds: state.start.nanoseconds + schedule.arrivalNanoseconds(ofTouch: state.done))
                let session = Int(state.random.next() % UInt64(self.store.count))
                self.store.touch(session, arrivedAt: arrival, appliedAt: now)
            }
        }
    }
}

/// When touches are due at a steady rate: touch `n` (counting from 1) is due once rate × elapsed
/// reaches `n`, that is `n / rate` seconds after the start.
///
/// In integer nanoseconds, split into whole seconds and the rest, so the two questions agree
/// exactly (a batch never applies a touch whose arrival is after the batch's own time) and a run
/// of any length cannot overflow.
struct TouchSchedule: Sendable {
    /// Touches per second, 1 through 1 000 000 000.
    let rate: Int

    init(rate: Int) {
        precondition(rate > 0 && rate <= 1_000_000_000, "touch rate out of range")
        self.rate = rate
    }

    /// How many touches are due `elapsed` nanoseconds after the start: ⌊rate × elapsed⌋.
    func touchesDue(afterNanoseconds elapsed: Int64) -> Int {
        guard elapsed > 0 else { return 0 }
        let seconds = Int(elapsed / 1_000_000_000)
        let rest = Int(elapsed % 1_000_000_000)
        return seconds * self.rate + rest * self.rate / 1_000_000_000
    }

    /// When touch `n` (counting from 1) is due, in nanoseconds after the start: ⌈n / rate⌉, the
    /// first nanosecond at which ``touchesDue(afterNanoseconds:)`` counts it.
    func arrivalNanoseconds(ofTouch n: Int) -> Int64 {
        let seconds = n / self.rate
        let rest = n % self.rate
        return Int64(seconds) * 1_000_000_000 + Int64((rest * 1_000_000_000 + self.rate - 1) / self.rate)
    }
}

/// A small, fast, seedable generator: a touch must cost a reschedule, not a random number.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
