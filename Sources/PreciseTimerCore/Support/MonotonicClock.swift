import Glibc

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds: the clock every deadline lives on, and the
/// one libevent reads with `EVENT_BASE_FLAG_PRECISE_TIMER`. A vDSO call, no system call.
@inline(__always)
func monotonicNanoseconds() -> Int64 {
    nanoseconds(of: CLOCK_MONOTONIC)
}

/// `clock_gettime(CLOCK_REALTIME)`: nanoseconds since the Unix epoch (wall-clock timers).
@inline(__always)
package func wallClockNanoseconds() -> Int64 {
    nanoseconds(of: CLOCK_REALTIME)
}

/// `clock_gettime(CLOCK_BOOTTIME)`: `CLOCK_MONOTONIC` plus the time spent suspended
/// (``TimerOptions/ClockKind/continuous`` timers).
@inline(__always)
package func continuousNanoseconds() -> Int64 {
    nanoseconds(of: CLOCK_BOOTTIME)
}

@inline(__always)
private func nanoseconds(of clock: clockid_t) -> Int64 {
    var now = timespec()
    clock_gettime(clock, &now)
    return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
}
