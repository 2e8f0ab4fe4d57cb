import PostgresNIO
import PreciseTimerTesting
import Testing

/// Issue 25: three `example-cron --postgres` replicas on one machine sharing one claims table, a
/// `*:*:0/1` `Persistent=true` unit, replicas killed with SIGKILL and restarted at random moments,
/// then all three stopped for 5 s and started again.
///
/// `PRECISE_TIMER_FLEET_RUNS=10` repeats the scenario (the measurement of the issue's targets) and
/// prints the figures of every run and their sum, with the winning replica's handler start minus
/// the occurrence at p50 and p99; `PRECISE_TIMER_FLEET_KILL_SECONDS` sets the phase of random
/// kills (default 20 s).
@Suite(.enabled(if: PostgresServer.isAvailable, PostgresServer.howToRun))
struct FleetTests {
    @Test(
        "issue 25: 3 replicas, SIGKILL and restart at random, a 5 s full stop: every occurrence runs once, one catch-up",
        .timeLimit(.minutes(30)))
    func fleetRunsEveryOccurrenceOnce() async throws {
        let runner = try #require(TestFiles.builtProduct("example-cron"), "example-cron is not built beside the tests")
        let runs = FleetScenario.environment("PRECISE_TIMER_FLEET_RUNS").flatMap { Int($0) } ?? 1
        let killSeconds = FleetScenario.environment("PRECISE_TIMER_FLEET_KILL_SECONDS").flatMap { Int64($0) } ?? 20
        let killPhase = killSeconds * FleetScenario.second
        var total = FleetScenario.Figures()
        for run in 1...max(1, runs) {
            let table = PostgresServer.freshTable("fleet")
            let directory = try TestFiles.temporaryDirectory(prefix: "precise-timer-fleet")
            let timeline = try await ChildProcess.blocking {
                try FleetScenario.scenario(runner: runner, directory: directory, table: table, killPhase: killPhase)
            }
            let claimed = try await PostgresServer.withClient { client in
                let rows = try await client.query(
                    PostgresQuery(unsafeSQL: "SELECT occurrence FROM \(table) WHERE unit = 'tick.timer'")
                ).collect()
                try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
                return try Set(rows.map { try $0.decode(Int64.self) })
            }
            let log = try TestFiles.read(directory + "/runs.log")
            let figures = FleetScenario.check(log: log, claimed: claimed, timeline: timeline)
            print("fleet run \(run)/\(runs): \(figures.summary)")
            for problem in figures.problems { Issue.record("run \(run): \(problem)") }
            // Kept when a check failed: the run log and each replica's output.
            if figures.problems.isEmpty { TestFiles.remove(directory) } else { print("kept \(directory)") }
            #expect(figures.doubles == 0, "run \(run): occurrences run twice")
            #expect(figures.lost == 0, "run \(run): occurrences lost while a replica was up")
            #expect(figures.catchUpsAfterFullStop == 1, "run \(run): catch-ups after the full stop")
            #expect(figures.required >= 10, "run \(run): too few seconds with a replica up to check anything")
            total.add(figures)
        }
        print("fleet total of \(runs) run(s): \(total.summary)")
    }
}
