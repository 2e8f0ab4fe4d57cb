import PreciseTimer

/// Parses durations written the way people write them on a command line: `1ms`, `250us`,
/// `0.5s`, `100ns`; a bare number is seconds.
enum DurationParsing {
    private static let units: [(suffix: String, seconds: Double)] = [
        ("ns", 1e-9), ("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("s", 1),
    ]

    /// - Throws: `PreciseTimerError` (`.invalidDelay`, with the text) for anything that is not a
    ///   finite, non-negative number with a known unit.
    static func parse(_ text: String) throws -> Duration {
        for (suffix, scale) in self.units where text.hasSuffix(suffix) {
            if let value = Double(text.dropLast(suffix.count)) {
                return try Duration.checkedSeconds(value * scale)
            }
        }
        guard let seconds = Double(text) else {
            throw PreciseTimerError(.invalidDelay, value: "\"\(text)\" (expected e.g. 1ms, 250us, 0.5s)")
        }
        return try Duration.checkedSeconds(seconds)
    }
}
