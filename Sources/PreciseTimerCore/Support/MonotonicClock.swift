import Glibc

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds: the clock every deadline lives on, and the
/// one libevent reads with `EVENT_BASE_FLAG_PRECISE_TIMER`. A vDSO call, no system call.
@inline(__always)
func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
}
