import CLibevent
import Glibc
import PreciseTimerCore

/// `WakeSystem=`'s alarm on the libevent service: a timerfd on `CLOCK_BOOTTIME_ALARM`, armed at a
/// unit's next elapse. Nothing reads it and the loop does not watch it: its one effect is the
/// kernel's wake-up from suspend at the deadline; the unit's own timer then fires on the loop.
/// Creating one needs `CAP_WAKE_ALARM` (`EPERM` otherwise).
final class WakeAlarmTimerFD: TimerWakeAlarm, @unchecked Sendable {
    // Invariant: `fd` is immutable and valid until deinit; `timerfd_settime` may be called from
    // any thread (the kernel orders the calls).
    private let fd: Int32

    /// - Throws: ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` naming
    ///   `timerfd_create` and `errno` (`EPERM` without `CAP_WAKE_ALARM`).
    init(id: TimerID) throws(PreciseTimerError) {
        let fd = timerfd_create(CLOCK_BOOTTIME_ALARM, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard fd >= 0 else {
            let error = Glibc.errno
            throw PreciseTimerError(
                .systemFailure, id: id, value: "WakeSystem=yes", function: "timerfd_create", returnCode: fd,
                errno: error,
                detail: error == EPERM
                    ? "CLOCK_BOOTTIME_ALARM needs CAP_WAKE_ALARM" : "no alarm clock to wake the machine with")
        }
        self.fd = fd
    }

    deinit {
        close(self.fd)
    }

    func arm(after delay: Duration) {
        // Relative, on the alarm clock; at least 1 ns (an all-zero value would disarm it).
        let nanoseconds = max(1, delay.timerNanoseconds ?? (delay < .zero ? 1 : TimerLimits.maximumNanoseconds))
        self.set(timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000)))
    }

    func disarm() {
        self.set(timespec())
    }

    private func set(_ value: timespec) {
        var spec = itimerspec()
        spec.it_value = value
        // A failure leaves the machine asleep past an elapse; the unit still runs at resume.
        _ = timerfd_settime(self.fd, 0, &spec, nil)
    }
}
