/// Everything `--json` prints: the run's settings, how it ended, and a summary per backend.
struct RunReport: Codable, Sendable {
    /// The ticker period in nanoseconds.
    var intervalNanoseconds: Int64
    /// `skip`, `burst` or `delay`.
    var policy: String
    /// The PreciseTimer spin finish in nanoseconds (0: sleep until each deadline).
    var spinMarginNanoseconds: Int64
    /// The requested run length in nanoseconds, when the run was bounded by time.
    var durationNanoseconds: Int64?
    /// The requested number of ticks per backend, when the run was bounded by count.
    var count: Int?
    /// How long the tickers actually ran.
    var elapsedNanoseconds: Int64
    /// Whether Ctrl-C ended the run early.
    var interrupted: Bool
    /// One entry per backend, in the order they were started.
    var results: [TickerSummary]
}
