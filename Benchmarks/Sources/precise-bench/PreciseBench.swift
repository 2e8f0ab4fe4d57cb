import ArgumentParser
import Foundation

/// `precise-bench`: every measurement of issue 4, side by side in one run, printed as one table.
///
/// A plain executable with HdrHistogram rather than an ordo-one/benchmark suite: that harness
/// times a closure run over and over, while lateness is the distribution of wake-ups of one live
/// timer, and the contestants must be interleaved round by round on this noisy 2-core VM and
/// compared within the run. The scale figures (cost, memory, storm, idle) each need a fresh
/// process, which this executable starts itself (`--probe`).
@main
struct PreciseBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "precise-bench",
        abstract: "Lateness, cost, memory, fire storm and idle CPU of PreciseTimer and its peers, side by side."
    )

    /// Smaller counts and shorter runs: about half a minute instead of about two.
    @Flag(help: "A run of about half a minute (fewer ticks, 200 000 pending instead of 1 000 000).")
    var quick = false

    /// Print the figures and verdicts as JSON instead of the table.
    @Flag(help: "Print the figures and target verdicts as JSON instead of the table.")
    var json = false

    /// Sections to run; all when empty.
    @Option(
        parsing: .upToNextOption,
        help: "Sections to run (default: all but peers).")
    var only: [BenchmarkRun.Section] = []

    /// Internal: run one scale measurement in this (child) process and print its figures.
    @Option(help: .hidden)
    var probe: String?

    /// Runs a probe (child process) or the whole benchmark, and prints the result.
    mutating func run() throws {
        if let probe = self.probe {
            try Probe(encoded: probe).runAndExit()
        }
        let plan = BenchPlan(quick: self.quick)
        let sections = self.only.isEmpty ? Set(BenchmarkRun.Section.defaults) : Set(self.only)
        var run = BenchmarkRun(plan: plan, sections: sections)
        try run.runAll()
        print(self.json ? try run.json() : run.table())
    }
}
