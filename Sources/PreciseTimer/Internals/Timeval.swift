import CLibevent
import PreciseTimerCore

extension timeval {
    /// Converts a duration for libevent, rounding **up** to the next whole microsecond so a
    /// timer armed with it never fires early; negative durations become zero ("now").
    /// Durations are bounded by ``PreciseTimer/maximumDuration`` before they get here, so the
    /// seconds always fit `time_t`.
    init(roundingUp duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else {
            self.init(tv_sec: 0, tv_usec: 0)
            return
        }
        let attosecondsPerMicrosecond: Int64 = 1_000_000_000_000
        let microseconds = (attoseconds + attosecondsPerMicrosecond - 1) / attosecondsPerMicrosecond
        if microseconds == 1_000_000 {
            self.init(tv_sec: time_t(seconds + 1), tv_usec: 0)
        } else {
            self.init(tv_sec: time_t(seconds), tv_usec: suseconds_t(microseconds))
        }
    }
}
