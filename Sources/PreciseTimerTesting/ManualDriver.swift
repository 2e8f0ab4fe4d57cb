import PreciseTimerCore

/// Three clocks that only move when told, and a doorbell that only counts its rings.
///
/// The monotonic clock is `now`; the continuous clock is `now` plus the time spent suspended; the
/// wall clock is `now` plus an offset that a step or a suspend changes. The offset is kept wide
/// (`Int128`), so a wall clock set anywhere in `Int64`'s range reads back exactly, and one that
/// runs past either end stays at that end instead of wrapping to the other.
final class ManualDriver: TimerDriver {
    private struct Clocks {
        var now: Int64
        var wakes = 0
        /// Total virtual suspend: continuous − monotonic.
        var suspended: Int64 = 0
        /// wall − monotonic, exact: the difference of two `Int64` values needs 65 bits.
        var wallOffset: Int128
    }
    private let state: SemaphoreGuarded<Clocks>

    init(now: Int64, wallClock: Int64) {
        self.state = SemaphoreGuarded(Clocks(now: now, wallOffset: Int128(wallClock) - Int128(now)))
    }

    func now() -> Int64 { self.state.withLock { $0.now } }
    func wake() { self.state.withLock { $0.wakes += 1 } }
    func wallClockNow() -> Int64 { self.state.withLock { Int64(clamping: Int128($0.now) + $0.wallOffset) } }
    func continuousNow() -> Int64 { self.state.withLock { saturatingAdd($0.now, $0.suspended) } }

    var wakes: Int { self.state.withLock { $0.wakes } }

    /// Moves the clock to `now`; never back.
    func set(_ now: Int64) {
        self.state.withLock { $0.now = max($0.now, now) }
    }

    /// Steps the wall clock to `wallClock`; the other clocks stay.
    func setWallClock(_ wallClock: Int64) {
        self.state.withLock { $0.wallOffset = Int128(wallClock) - Int128($0.now) }
    }

    /// Sleeps `nanoseconds`: the continuous and wall clocks move, the monotonic one does not.
    func suspend(_ nanoseconds: Int64) {
        self.state.withLock {
            $0.suspended = saturatingAdd($0.suspended, nanoseconds)
            $0.wallOffset += Int128(nanoseconds)  // Far from overflowing: each is at most 2^62.
        }
    }
}
