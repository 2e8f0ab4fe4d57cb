import Glibc
import PreciseTimerTesting
import Testing

/// The fleet scenario's checks on made-up runs (no database, no replicas): what counts as lost.
struct FleetCheckTests {
    private static let second = FleetScenario.second
    /// A whole second on the wall clock, as the scenario's occurrences are.
    private static let base: Int64 = 1_795_723_080 * 1_000_000_000

    /// Two replicas ready half a second before `base` and up well after it, each with the given runs
    /// (occurrence offset in seconds, start offset in ns, duration in seconds); occurrences 0...4
    /// claimed as their runs say.
    private static func check(
        _ runs: [[(occurrence: Int64, start: Int64, duration: String)]]
    ) throws
        -> FleetScenario.Figures
    {
        let directory = try TestFiles.temporaryDirectory(prefix: "precise-timer-fleet-check", units: false)
        defer { TestFiles.remove(directory) }
        var timeline = FleetScenario.Timeline()
        var log = ""
        var claimed: Set<Int64> = []
        for (index, replicaRuns) in runs.enumerated() {
            let pid = pid_t(1000 + index)
            let output = directory + "/replica-\(index).out"
            var text = "1 timer listed.\n"
            for run in replicaRuns {
                let occurrence = Self.base + run.occurrence * Self.second
                log += "tick \(occurrence) \(pid)@\(Self.base) 0 \(occurrence + run.start)\n"
                claimed.insert(occurrence)
                text += "done tick status=exit 0 duration=\(run.duration) late=0.001s\n"
            }
            try TestFiles.write(output, text)
            timeline.replicas.append(
                FleetScenario.Replica(
                    pid: pid, output: output, spawned: Self.base - Self.second, ready: Self.base - Self.second / 2,
                    killed: Self.base + 20 * Self.second))
        }
        // No full stop in these runs: both stamps before the first occurrence checked.
        timeline.fullStop = Self.base - 20 * Self.second
        timeline.restart = Self.base - 20 * Self.second
        timeline.end = Self.base + 5 * Self.second
        return FleetScenario.check(log: log, claimed: claimed, timeline: timeline)
    }

    /// Second 3 is nobody's: replica 0 runs second 2's command for 1.9 s, replica 1 second 1's
    /// for `duration`. Both still running at second 3: dropped behind a slow run; replica 1 done
    /// by then (idle at second 3): lost.
    @Test(
        "an unclaimed second is dropped when every replica ran an earlier second's command, lost when one was idle",
        arguments: [("2.500s", 0, 1), ("0.500s", 1, 0)])
    func unclaimedSecond(duration: String, lost: Int, dropped: Int) throws {
        let figures = try Self.check([
            [(0, 2_000_000, "0.010s"), (2, 3_000_000, "1.900s"), (4, 1_000_000, "0.010s")],
            [(1, 5_000_000, duration)],
        ])
        #expect(figures.lost == lost)
        #expect(figures.droppedBehindASlowRun == dropped)
        #expect(figures.problems.filter { $0.hasPrefix("lost \(Self.base / Self.second + 3):") }.count == lost)
    }
}
