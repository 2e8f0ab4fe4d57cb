import Glibc

/// Process CPU time from `getrusage(RUSAGE_SELF)`: user + system, all threads.
struct CPUTime: Sendable {
    var user: Duration
    var system: Duration

    static func now() -> CPUTime {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func duration(_ time: timeval) -> Duration {
            .seconds(Int64(time.tv_sec)) + .microseconds(Int64(time.tv_usec))
        }
        return CPUTime(user: duration(usage.ru_utime), system: duration(usage.ru_stime))
    }

    var total: Duration { self.user + self.system }

    static func - (lhs: CPUTime, rhs: CPUTime) -> CPUTime {
        CPUTime(user: lhs.user - rhs.user, system: lhs.system - rhs.system)
    }
}

extension Duration {
    /// Whole nanoseconds (rounded toward zero): what the counters and deadlines are kept in.
    var wholeNanoseconds: Int64 {
        self.components.seconds * 1_000_000_000 + self.components.attoseconds / 1_000_000_000
    }
}

/// The formatting the stats lines share.
enum Format {
    static func seconds(_ duration: Duration) -> Double {
        let components = duration.components
        return Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// `12.3µs`, `4.56ms` or `1.20s`.
    static func short(_ duration: Duration) -> String {
        let seconds = self.seconds(duration)
        if seconds < 1e-3 { return self.fixed(seconds * 1e6, 1) + "µs" }
        if seconds < 1 { return self.fixed(seconds * 1e3, 2) + "ms" }
        return self.fixed(seconds, 2) + "s"
    }

    static func fixed(_ value: Double, _ decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        var text = "\(rounded)"
        if let dot = text.firstIndex(of: ".") {
            let have = text.distance(from: dot, to: text.endIndex) - 1
            if have < decimals { text += String(repeating: "0", count: decimals - have) }
            if decimals == 0 { text.removeSubrange(dot...) }
        }
        return text
    }

    /// The percentile `p` (0...1) of `values`, nearest-rank; zero for no values.
    static func percentile(_ p: Double, of values: [Int64]) -> Duration {
        guard !values.isEmpty else { return .zero }
        let sorted = values.sorted()
        let rank = max(0, min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1))
        return .nanoseconds(sorted[rank])
    }
}
