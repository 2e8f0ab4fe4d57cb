import Glibc

/// The CPU time the whole process has used (user and system), from `getrusage`.
func processCPU() -> Duration {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let micros =
        (Int64(usage.ru_utime.tv_sec) + Int64(usage.ru_stime.tv_sec)) * 1_000_000
        + Int64(usage.ru_utime.tv_usec) + Int64(usage.ru_stime.tv_usec)
    return .microseconds(micros)
}
