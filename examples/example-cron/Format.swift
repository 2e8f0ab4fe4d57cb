import Glibc
import PreciseTimer
import PreciseTimerCalendar

/// Times and spans as systemctl writes them.
enum Format {
    /// Local time, `Thu 2026-11-26 06:40:00 CET`.
    static func instant(_ instant: WallClockInstant) -> String {
        var seconds = time_t(instant.nanosecondsSinceEpoch / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%a %Y-%m-%d %H:%M:%S %Z", &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Seconds with milliseconds, `0.005s`, `12.340s`: a run's duration.
    static func seconds(_ duration: Duration) -> String {
        let milliseconds = max(
            0, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)s"
    }

    /// The two largest units, as `format_timespan()` with systemctl's accuracy: `3min 2s`,
    /// `1h 12min`, `2 days 3h`, `450ms`; a negative span as `0`.
    static func span(_ duration: Duration) -> String {
        let (wholeSeconds, attoseconds) = duration.components
        guard wholeSeconds > 0 || attoseconds > 0 else { return "0" }
        if wholeSeconds == 0 { return "\(attoseconds / 1_000_000_000_000_000)ms" }
        let units: [(String, Int64)] = [("w", 604_800), (" days", 86_400), ("h", 3600), ("min", 60), ("s", 1)]
        var remaining = wholeSeconds
        var parts: [String] = []
        for (name, size) in units where remaining >= size || !parts.isEmpty {
            let count = remaining / size
            remaining %= size
            if count > 0 { parts.append("\(count)\(count == 1 && name == " days" ? " day" : name)") }
            if parts.count == 2 || (!parts.isEmpty && count == 0) { break }
        }
        return parts.joined(separator: " ")
    }
}
