import Foundation
import Histogram
import PreciseTimer

/// Clocks and counters the benchmarks read.
enum Measure {
    /// CLOCK_MONOTONIC in nanoseconds: the clock every deadline here is on.
    static func now() -> Int64 { MonotonicInstant.now().nanoseconds }

    /// User + system CPU time of the whole process, in nanoseconds.
    static func processCPU() -> Int64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let microseconds =
            (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000
            + Int(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
        return Int64(microseconds) * 1_000
    }

    /// Resident set size in bytes, from /proc/self/statm.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// Lateness samples of one run, in nanoseconds, and what they summarise to.
struct LatenessRun: Sendable {
    var samples: [Int64] = []
    /// Phase error of the last call against the ideal grid start + k·interval.
    var drift: Int64 = 0
    var missed: UInt64 = 0

    mutating func append(_ other: LatenessRun) {
        self.samples += other.samples
        self.drift = other.drift
        self.missed += other.missed
    }

    var histogram: Histogram<UInt64> {
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        for sample in self.samples { _ = histogram.record(UInt64(max(sample, 0))) }
        return histogram
    }
}

/// A fixed buffer one handler thread writes and the caller reads after the run: the services
/// never run a timer's handler concurrently with itself.
final class SampleBuffer: @unchecked Sendable {
    // Invariant: one writer at a time (the timer's handler); read only after `done` was signalled.
    var samples: [Int64]
    var missed: UInt64 = 0
    var lastLateness: Int64 = 0
    let done = DispatchSemaphore(value: 0)

    init(capacity: Int) {
        self.samples = []
        self.samples.reserveCapacity(capacity)
    }

    var run: LatenessRun { LatenessRun(samples: self.samples, drift: self.lastLateness, missed: self.missed) }
}
