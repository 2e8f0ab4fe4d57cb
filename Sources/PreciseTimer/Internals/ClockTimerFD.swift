import CLibevent
import Glibc
import PreciseTimerCore

/// A timerfd on a clock libevent does not keep: `CLOCK_REALTIME` (wall-clock timers) or
/// `CLOCK_BOOTTIME` (continuous timers), armed at an absolute deadline and watched by the loop
/// as a read event, so a daily timer costs no periodic wake-up.
///
/// The wall-clock one is armed with `TFD_TIMER_CANCEL_ON_SET`: when the wall clock is stepped
/// (NTP, `settimeofday`) or the machine resumes, a read fails with `ECANCELED`. Either way the
/// engine re-estimates its bound timers (``TimerCore/rebase()``) and re-arms.
final class ClockTimerFD: @unchecked Sendable {
    // Invariant: `fd` is immutable and valid until deinit; arming and reading happen on the loop
    // thread only.

    enum Clock {
        case wall
        case continuous

        fileprivate var id: clockid_t {
            switch self {
            case .wall: CLOCK_REALTIME
            case .continuous: CLOCK_BOOTTIME
            }
        }
    }

    /// What a read found.
    enum Event: Equatable {
        /// The deadline passed.
        case expired
        /// The wall clock was stepped, or the machine resumed (`ECANCELED`): re-estimate, re-arm.
        case clockChanged
        /// Nothing (a spurious wake-up, or the deadline moved since).
        case none
    }

    let clock: Clock
    let fd: Int32

    /// - Throws: ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` naming `timerfd_create` and `errno`.
    init(_ clock: Clock) throws(PreciseTimerError) {
        let fd = timerfd_create(clock.id, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard fd >= 0 else {
            throw PreciseTimerError(.systemFailure, function: "timerfd_create", returnCode: fd, errno: Glibc.errno)
        }
        self.clock = clock
        self.fd = fd
    }

    deinit {
        close(self.fd)
    }

    /// Arms the timer at `deadline` (nanoseconds on its clock), or far in the future when `nil`:
    /// the wall-clock timer stays armed even with no deadline, so that a step is still seen.
    ///
    /// - Returns: 0, or `errno` when `timerfd_settime` failed.
    func arm(at deadline: Int64?) -> Int32 {
        // A year ahead of now stands for "no deadline": far enough never to fire in practice, and
        // within every `time_t`.
        let target = deadline ?? (self.now() &+ 365 * 86_400 * 1_000_000_000)
        let clamped = max(target, 1)
        var spec = itimerspec()
        spec.it_value = timespec(tv_sec: Int(clamped / 1_000_000_000), tv_nsec: Int(clamped % 1_000_000_000))
        var flags = Int32(TFD_TIMER_ABSTIME)
        if self.clock == .wall { flags |= Int32(TFD_TIMER_CANCEL_ON_SET) }
        return timerfd_settime(self.fd, flags, &spec, nil) == 0 ? 0 : Glibc.errno
    }

    /// Reads the timer after the loop saw it readable (never blocks).
    func read() -> Event {
        var expirations: UInt64 = 0
        let count = Glibc.read(self.fd, &expirations, MemoryLayout<UInt64>.size)
        if count == MemoryLayout<UInt64>.size { return .expired }
        return count < 0 && Glibc.errno == ECANCELED ? .clockChanged : .none
    }

    private func now() -> Int64 {
        var now = timespec()
        clock_gettime(self.clock.id, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
