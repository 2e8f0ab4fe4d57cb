import Glibc
import PreciseTimerCore

extension LibeventBase {
    /// Refuses a caller's base that cannot keep the service's precision: a backend other than
    /// epoll (poll and select have no timerfd), or a base built without
    /// `EVENT_BASE_FLAG_PRECISE_TIMER` (epoll then waits in whole milliseconds and libevent reads
    /// the coarse clock, which moves in 1 to 4 ms steps).
    ///
    /// libevent 2.1 has no `event_base_get_flags`; the flag shows in the clock the base reads
    /// (`event_gettime_monotonic`): `CLOCK_MONOTONIC` with it, `CLOCK_MONOTONIC_COARSE` without
    /// (libevent's `evutil_configure_monotonic_time_`; the `EVENT_PRECISE_TIMER` environment
    /// variable sets the flag too). Read between two reads of `CLOCK_MONOTONIC`, the precise clock
    /// always lies between them; the coarse one holds the last kernel tick, so over 20 µs of
    /// back-to-back samples (less than one tick) it falls behind the earlier read at least once.
    func checkPrecision() throws(PreciseTimerError) {
        let method = self.method
        guard method == "epoll" else {
            throw PreciseTimerError(
                .invalidEventBase,
                value: "the base uses \(method), not epoll: no timerfd, so timers would wait in whole milliseconds",
                function: "event_base_get_method")
        }
        func microseconds() -> Int64 { MonotonicInstant.now().nanoseconds / 1_000 }
        for _ in 0..<1_000 {
            let first = microseconds()
            var last = first
            while last - first < 20 {
                let before = microseconds()
                let read = try self.monotonicMicroseconds()
                last = microseconds()
                guard read >= before, read <= last else {
                    throw PreciseTimerError(
                        .invalidEventBase,
                        value: "the base was built without EVENT_BASE_FLAG_PRECISE_TIMER: it reads the coarse "
                            + "clock and waits in whole milliseconds",
                        function: "event_gettime_monotonic")
                }
            }
            // A sample taken after a preemption longer than a tick could match a coarse clock.
            if last - first < 500 { return }
        }
        throw PreciseTimerError(
            .invalidEventBase, value: "the base's clock could not be told apart from the coarse clock",
            function: "event_gettime_monotonic")
    }

    /// What `event_base_new_with_config` opens: the epoll descriptor, the precise timer's
    /// timerfd, and the socketpair of libevent's signal handling, whose failure libevent 2.1
    /// treats as fatal (`evsig_init_` calls `event_sock_err(1, …)`, which calls `exit(1)` even
    /// with a fatal callback set) instead of returning an error.
    static let descriptorsNeeded = 4

    /// Holds ``descriptorsNeeded`` free slots of the process's table (duplicates of `fd`), so
    /// that running out is a typed ``PreciseTimerError/Code/systemFailure`` (`EMFILE`) here,
    /// never libevent's `exit`. ``PrivateTableBuild`` makes libevent's descriptors land on them.
    ///
    /// - Returns: The reserved descriptors, the caller's to close or replace.
    static func reserveDescriptors(like fd: Int32) throws(PreciseTimerError) -> [Int32] {
        var reserved: [Int32] = []
        for _ in 0..<Self.descriptorsNeeded {
            let descriptor = fcntl(fd, F_DUPFD_CLOEXEC, 0)
            guard descriptor >= 0 else {
                let error = PreciseTimerError(
                    .systemFailure, value: "\(Self.descriptorsNeeded) free file descriptors for libevent",
                    function: "fcntl(F_DUPFD_CLOEXEC)", returnCode: descriptor, errno: Glibc.errno)
                for descriptor in reserved { close(descriptor) }
                throw error
            }
            reserved.append(descriptor)
        }
        return reserved
    }
}
