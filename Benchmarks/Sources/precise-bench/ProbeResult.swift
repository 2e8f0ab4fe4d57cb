import Histogram

/// What a child process reports back: named figures, and a lateness histogram when the
/// measurement has one (so that the parent can merge rounds exactly).
struct ProbeResult: Codable, Sendable {
    /// Named figures; each probe documents its names and units.
    var figures: [String: Double]
    /// Lateness in nanoseconds, for the concurrent-timers probe.
    var histogram: Histogram<UInt64>?

    /// Creates a result.
    init(figures: [String: Double], histogram: Histogram<UInt64>? = nil) {
        self.figures = figures
        self.histogram = histogram
    }

    /// A figure, or NaN when the probe did not report it.
    subscript(_ name: String) -> Double {
        self.figures[name] ?? .nan
    }
}
