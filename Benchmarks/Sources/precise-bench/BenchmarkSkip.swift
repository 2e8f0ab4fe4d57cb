/// Why a contestant or measurement did not run (for example `SCHED_FIFO` without permission).
struct BenchmarkSkip: Error, Sendable, CustomStringConvertible {
    /// The reason, shown in the table.
    let reason: String

    /// The reason.
    var description: String { self.reason }
}
