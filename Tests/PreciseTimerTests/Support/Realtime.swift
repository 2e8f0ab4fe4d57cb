// CLibevent: with it, timespec's members resolve whatever files the compiler batches this with
// (MemberImportVisibility finds them through the shims module it re-exports).
import CLibevent
import Glibc

/// `CLOCK_REALTIME` now, in nanoseconds since the epoch: the wall clock a test compares a
/// wall-clock timer's call with.
func realtimeNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
