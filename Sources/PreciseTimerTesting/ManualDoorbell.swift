import PreciseTimerCore

/// A clock that only moves when told, and a doorbell that only counts its rings.
final class ManualDoorbell: TimerDoorbell {
    private let state: SemaphoreGuarded<(now: Int64, wakes: Int)>

    init(now: Int64) {
        self.state = SemaphoreGuarded((now: now, wakes: 0))
    }

    func now() -> Int64 { self.state.withLock { $0.now } }
    func wake() { self.state.withLock { $0.wakes += 1 } }

    var wakes: Int { self.state.withLock { $0.wakes } }

    /// Moves the clock to `now`; never back.
    func set(_ now: Int64) {
        self.state.withLock { $0.now = max($0.now, now) }
    }
}
