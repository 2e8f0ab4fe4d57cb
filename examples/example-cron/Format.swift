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
}
