import ArgumentParser
import Foundation

/// One invocation: runs the chosen sections in order, fills the ``Report`` and a flat map of
/// figures for `--json`.
struct BenchmarkRun {
    /// The sections, in the order they run and print.
    enum Section: String, CaseIterable, Sendable, ExpressibleByArgument {
        /// Lateness of one 1 ms periodic timer per contestant.
        case lateness
        /// 100 and 10 000 concurrent 1 ms timers.
        case concurrent
        /// schedule + cancel per timer at scale.
        case cost
        /// reschedule vs cancel + schedule, scheduledCount vs scheduledIDs.count, worst single call.
        case control
        /// RSS per pending timer.
        case memory
        /// 100 000 one-shots due at one instant.
        case storm
        /// Process CPU while one 1 s timer idles.
        case idle
        /// schedule + cancel and fire with `Configuration.metrics` off and on.
        case metrics
        /// Wall-clock timers: lateness against the monotonic timer, calendar cost, idle CPU.
        case wallclock
        /// `withTimeout` against a task group racing `Task.sleep`.
        case timeout
        /// PreciseTimer beside raw libevent, Go, tokio and tokio-util's DelayQueue: the same work
        /// with the same seeded draws (not in a default run: it builds and runs the peers).
        case peers

        /// The sections a run without `--only` runs.
        static var defaults: [Section] { Self.allCases.filter { $0 != .peers } }
    }

    /// Sizes and durations.
    let plan: BenchPlan
    /// What to run.
    let sections: Set<Section>
    /// The table being built.
    var report = Report()
    /// Every figure by a dotted key, for `--json`.
    var figures: [String: Double] = [:]

    /// Creates a run of `sections`.
    init(plan: BenchPlan, sections: Set<Section>) {
        self.plan = plan
        self.sections = sections
    }

    /// Runs every chosen section; progress goes to stderr.
    mutating func runAll() throws {
        let start = Measure.now()
        for section in Section.allCases where self.sections.contains(section) {
            switch section {
            case .lateness: self.measureLateness()
            case .concurrent: self.measureConcurrent()
            case .cost: self.measureCost()
            case .control: self.measureControl()
            case .memory: self.measureMemory()
            case .storm: self.measureStorm()
            case .idle: self.measureIdle()
            case .metrics: self.measureMetrics()
            case .wallclock: self.measureWallClock()
            case .timeout: self.measureTimeLimits()
            case .peers: self.measurePeers()
            }
        }
        Self.log("done in \(Int(Double(Measure.now() - start) / 1e9)) s")
    }

    /// Prints a progress line to stderr (stdout carries only the table or the JSON).
    static func log(_ message: String) {
        FileHandle.standardError.write(Data("[precise-bench] \(message)\n".utf8))
    }

    /// The machine and run, for the heading.
    var heading: String {
        var uts = utsname()
        uname(&uts)
        let release = withUnsafeBytes(of: uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let cpuInfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuInfo.split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        return "PreciseTimer benchmarks, \(self.plan.quick ? "quick" : "full") run: "
            + "\(ProcessInfo.processInfo.activeProcessorCount) cores (\(model)), Linux \(release)"
    }

    /// The heading, the table and the list of targets.
    func table() -> String {
        let met = self.report.targets.filter(\.met).count
        var lines = ["# \(self.heading)", "", self.report.render(), ""]
        if !self.report.targets.isEmpty {
            lines.append("Targets: \(met) of \(self.report.targets.count) met")
            lines += self.report.targets.map { "- \($0.met ? "✅" : "❌") \($0.text)" }
        }
        return lines.joined(separator: "\n")
    }

    /// The heading, every figure and every target verdict as JSON.
    func json() throws -> String {
        struct Output: Encodable {
            var heading: String
            var figures: [String: Double]
            var targets: [Report.Target]
        }
        let finite = self.figures.filter { $0.value.isFinite }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(Output(heading: self.heading, figures: finite, targets: self.report.targets))
        return String(decoding: data, as: UTF8.self)
    }
}
