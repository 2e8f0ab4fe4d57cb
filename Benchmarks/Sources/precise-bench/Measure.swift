import Foundation
import PreciseTimer

/// The clocks and counters every measurement reads.
enum Measure {
    /// `CLOCK_MONOTONIC` in nanoseconds: the clock every deadline here is on (a fresh vDSO read,
    /// never an event loop's cached time).
    static func now() -> Int64 {
        MonotonicInstant.now().nanoseconds
    }

    /// User + system CPU time of the whole process (every thread), in nanoseconds, from
    /// `getrusage(RUSAGE_SELF)`.
    static func processCPU() -> Int64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let seconds = Int64(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        let microseconds = Int64(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
        return seconds * 1_000_000_000 + microseconds * 1_000
    }

    /// Resident set size in bytes: the second field of `/proc/self/statm`, in pages.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The CPUs this process may run on.
    static var cores: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// Sleeps the calling thread (never a Swift concurrency thread here) for `seconds`.
    static func sleep(seconds: Double) {
        Thread.sleep(forTimeInterval: seconds)
    }
}
