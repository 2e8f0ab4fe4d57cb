import ArgumentParser
import Logging
import PreciseTimer
import PreciseTimerCalendar
import PreciseTimerServiceLifecycle
import ServiceLifecycle
import UnixSignals

/// `swift run example-cron --units DIR --state DIR`: a directory of systemd `.timer` files run
/// in process, each elapse running its command as a child process.
@main
struct CronCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example-cron",
        abstract: "A job runner for systemd .timer files, on one PreciseTimer with a DirectoryTimerStateStore.",
        discussion: """
            Every name.timer in --units is scheduled as systemd would (OnCalendar=, OnBootSec=, \
            OnUnitActiveSec=, Persistent=, RandomizedDelaySec=, …). An elapse runs the ExecStart= \
            lines of name.service beside it (or of the service its Unit= names), one after another, \
            split as systemd splits them but without $VAR or % substitution; without a .service, \
            the shell line in name.command (/bin/sh -c). A job never overlaps itself. Its output \
            is passed through, each line prefixed with the unit's name; each run is logged with \
            its occurrence, exit status and duration. The last trigger of every unit is kept in \
            --state (one stamp file per unit), so Persistent=true runs one catch-up for an \
            occurrence missed while the runner was down, and two runners sharing --state never \
            run one occurrence twice. With --postgres instead, every occurrence is claimed in one \
            PostgreSQL table and exactly one runner of a fleet runs it. The list-timers table is printed at start, on SIGUSR1 and \
            every --list-every. SIGTERM or SIGINT stops scheduling, waits --grace for running \
            jobs, then sends them SIGTERM (SIGKILL a second later), and exits 0. Spans: systemd's \
            syntax (30s, 5min, 1h 30min).
            """
    )

    @Option(help: "The directory of *.timer files (with a .service or .command beside each).")
    var units: String?

    @Option(help: "The directory of the units' stamp files (created if missing).")
    var state: String?

    @Option(
        help: """
            Run as one replica of a fleet: claim each occurrence in PostgreSQL \
            (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE, no TLS) instead of --state; \
            exactly one replica runs it.
            """)
    var postgres: String?

    @Option(help: "With --postgres: the table of the claims (created if missing).")
    var postgresTable: String = "precise_timer_runs"

    @Option(
        help: """
            With --postgres: delete claims older than this time span (systemd's syntax: 7d, 12h), \
            keeping each unit's latest, at start and every hour. (default: keep every claim)
            """,
        transform: parseSpan)
    var retention: Duration?

    @Option(
        help: "Print the list-timers table this often too. (default: at start and on SIGUSR1 only)",
        transform: parseSpan)
    var listEvery: Duration?

    @Option(help: "How long running jobs may take to finish after SIGTERM. (default: 10s)", transform: parseSpan)
    var grace: Duration = .seconds(10)

    @Option(
        help: ArgumentHelp(
            "Append '<unit> <occurrence-ns> <pid>@<runner-start-ns> <catch-up 0/1> <run-start-ns>' to this file before each run (O_APPEND).",
            visibility: .hidden))
    var runLog: String?

    @Option(
        help: """
            Test mode: run a '*:*:0/1' Persistent=true unit in a child runner, kill it with SIGKILL \
            at a random moment, this many times, and check from the run log that no occurrence \
            ran twice, no start ran more than one catch-up, and every run had its occurrence. Exits 1 \
            otherwise.
            """)
    var restartLoop: Int?

    @Option(help: "Restart loop: the longest a child runs before SIGKILL. (default: 3s)", transform: parseSpan)
    var restartMaxRun: Duration = .seconds(3)

    @Option(help: "Restart loop: the longest pause before the next child starts. (default: 2s)", transform: parseSpan)
    var restartMaxDown: Duration = .seconds(2)

    @Option(help: "Restart loop: keep the run log at this path (default: a temporary directory's).")
    var restartLog: String?

    @Option(help: "Log level (stderr): trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        if let restarts = self.restartLoop {
            guard restarts > 0 else { throw ValidationError("--restart-loop must be at least 1") }
            guard self.restartMaxRun > .zero else { throw ValidationError("--restart-max-run must be positive") }
        } else {
            guard self.units != nil, self.state != nil || self.postgres != nil else {
                throw ValidationError("--units and --state (or --postgres) are required")
            }
        }
        guard Logger.Level(rawValue: self.logLevel) != nil else {
            throw ValidationError("--log-level: unknown level '\(self.logLevel)'")
        }
    }

    /// Holds SIGTERM and SIGINT first (see `EarlySignals`): a signal that comes while the runner
    /// starts is handed to its group instead of killing it.
    static func main() async {
        EarlySignals.hold()
        await Self.main(nil)
    }

    func run() async throws {
        if let restarts = self.restartLoop {
            let passed = await RestartLoop(
                restarts: restarts, maxRun: self.restartMaxRun, maxDown: self.restartMaxDown,
                logPath: self.restartLog
            ).run(output: Output())
            if !passed { throw ExitCode(1) }
            return
        }
        let level = Logger.Level(rawValue: self.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "example-cron")
        guard let units = self.units else { throw ExitCode(2) }

        let jobs: [Job]
        do {
            jobs = try Job.load(from: units)
        } catch {
            logger.error("cannot load the units", metadata: ["units": "\(units)", "error": "\(error)"])
            throw ExitCode(1)
        }
        if let url = self.postgres {
            let table = self.postgresTable
            try await Fleet.withStore(url: url, table: table, retention: self.retention, logger: logger) { store in
                try await self.run(jobs, units: units, store: store, described: "postgres \(table)", logger)
            }
        } else if let state = self.state {
            let store = try DirectoryTimerStateStore(directory: state)
            try await self.run(jobs, units: units, store: store, described: store.directory, logger)
        }
    }

    private func run(
        _ jobs: [Job], units: String, store: any TimerStateStore, described: String, _ logger: Logger
    ) async throws {
        let timers = try PreciseTimer(
            configuration: .init(threadName: "cron", logger: Logger(label: "example-cron.timers")))
        let output = Output()
        let cron = CronService(
            timers: timers, store: store, jobs: jobs, output: output,
            runLog: try self.runLog.map { try RunLog(path: $0) }, grace: self.grace, listEvery: self.listEvery)
        for job in jobs where !job.unit.ignored.isEmpty {
            logger.notice(
                "directives without meaning in process",
                metadata: ["unit": "\(job.name).timer", "ignored": "\(job.unit.ignored.joined(separator: ", "))"])
        }
        logger.info(
            "started", metadata: ["units": "\(jobs.count)", "directory": "\(units)", "state": "\(described)"])

        // The timers first: a ServiceGroup stops its services in reverse order, so the runner
        // stops (and waits for its jobs) while the timers still run.
        var configuration = ServiceGroupConfiguration(
            services: [
                .init(service: timers),
                .init(service: cron, successTerminationBehavior: .gracefullyShutdownGroup),
            ],
            logger: logger)
        configuration.gracefulShutdownSignals = [.sigterm, .sigint]
        try await ServiceGroup(configuration: configuration).run()
        logger.info("stopped")
    }
}

/// systemd's time spans (`30s`, `5min`, `1h 30min`); a bare number is seconds, as in systemd.
func parseSpan(_ text: String) throws -> Duration {
    do {
        return try Duration(systemdTimeSpan: text)
    } catch {
        throw ValidationError("'\(text)' is not a time span: \(error.detail ?? "\(error)")")
    }
}
