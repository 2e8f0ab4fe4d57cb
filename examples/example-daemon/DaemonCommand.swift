import ArgumentParser
import Logging
import PreciseTimer
import PreciseTimerCalendar
import PreciseTimerServiceLifecycle
import ServiceLifecycle
import UnixSignals

/// `swift run example-daemon`: a session store on PreciseTimer, run by a `ServiceGroup` that
/// shuts it down gracefully on SIGTERM or SIGINT.
@main
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example-daemon",
        abstract: "A session store with idle expiry, a heartbeat and stats, on PreciseTimer.",
        discussion: """
            Every session has an idle-expiry timer, pushed back on every touch to --expiry after \
            the touch's arrival. The touches stand for clients: a repeating timer on a lane of \
            their own ("clients") applies them in a batch every millisecond, each at its own \
            arrival instant, spread evenly over the millisecond as independent clients would send \
            them. All sessions start at once, so those no touch reached expire together: a bulk \
            expiry every --expiry. An expired session is counted and recreated at once (the \
            population stays constant). The session timers run on their own PreciseTimer (a lane) \
            so the bulk expiry cannot delay the heartbeat; --single-lane puts the heartbeat on the \
            sessions' service to show the difference (the touches keep their clients lane either \
            way: they stand for network traffic, not for the daemon's timers). Stats lines show the \
            sessions lane's wake-ups per second and the CPU of its loop thread (sessions-cpu) \
            beside the whole process's. A calendar job (--rollup, systemd's OnCalendar= syntax, `minutely` by \
            default) prints a roll-up of the counters at each of its wall-clock occurrences. \
            SIGTERM or SIGINT stops it gracefully (status 0) after a final stats line. \
            Logs go to stderr, stats lines to stdout. Durations: 10s, 500ms, 250us; a bare number \
            is seconds.
            """
    )

    @Option(help: "How many sessions.")
    var sessions = 100_000

    @Option(help: "Touches per second, spread over random sessions and over time (from the clients lane).")
    var touchRate = 10_000

    @Option(help: "Idle time after which a session expires. (default: 5s)", transform: parseDuration)
    var expiry: Duration = .seconds(5)

    @Option(
        help:
            "How late a session expiry may fire, so that expiries share wake-ups (0: each at its deadline). (default: 0)",
        transform: parseDuration)
    var expiryTolerance: Duration = .zero

    @Option(help: "The heartbeat's period. (default: 10ms)", transform: parseDuration)
    var heartbeat: Duration = .milliseconds(10)

    @Option(help: "Time between stats lines. (default: 1s)", transform: parseDuration)
    var statsInterval: Duration = .seconds(1)

    @Option(
        help: "Stop by itself after this long, as if sent SIGTERM. (default: run until signalled)",
        transform: parseDuration)
    var duration: Duration?

    @Option(
        help: "When the roll-up job runs, in systemd's OnCalendar= syntax (check one with `systemd-analyze calendar`)."
    )
    var rollup = "minutely"

    @Flag(
        help: "Run the heartbeat on the sessions' service instead of its own lane (touches keep the clients lane).")
    var singleLane = false

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard self.sessions > 0 else { throw ValidationError("--sessions must be at least 1") }
        guard (0...1_000_000_000).contains(self.touchRate) else {
            throw ValidationError("--touch-rate must be 0 through 1000000000")
        }
        guard self.expiryTolerance >= .zero else { throw ValidationError("--expiry-tolerance cannot be negative") }
        guard self.expiry > .zero, self.heartbeat > .zero, self.statsInterval > .zero else {
            throw ValidationError("--expiry, --heartbeat and --stats-interval must be greater than zero")
        }
        do {
            _ = try CalendarSchedule(self.rollup)
        } catch {
            throw ValidationError("--rollup: \(error)")
        }
        guard Logger.Level(rawValue: self.logLevel) != nil else {
            throw ValidationError("--log-level: unknown level '\(self.logLevel)'")
        }
    }

    /// Holds SIGTERM and SIGINT before anything else, the parsing of the options included: one
    /// that comes while the daemon starts (before its group listens) is handed to the group,
    /// instead of killing the process (see `EarlySignals`).
    static func main() async {
        EarlySignals.hold()
        await Self.main(nil)
    }

    func run() async throws {
        let level = Logger.Level(rawValue: self.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "example-daemon")

        // The sessions get a service of their own, a lane: a bulk expiry runs tens of thousands
        // of handlers back to back on its loop thread, and a heartbeat sharing that thread waits
        // for all of them.
        // Each lane logs through the daemon's handler (start and stop at debug, a stalled
        // handler as a warning, engine failures as errors), under a label of its own.
        // Its wake-ups are counted through the metrics hook, for the stats lines.
        let sessionWakeUps = WakeUpCounter()
        let sessionsLane = try PreciseTimer(
            configuration: .init(
                threadName: "sessions", logger: Logger(label: "example-daemon.timers.sessions"),
                metrics: sessionWakeUps))
        let heartbeatLane =
            self.singleLane
            ? sessionsLane
            : try PreciseTimer(
                configuration: .init(threadName: "heartbeat", logger: Logger(label: "example-daemon.timers.heartbeat")))
        // The touch driver's lane, even with --single-lane: it plays the clients (network traffic
        // arriving from outside), not one of the daemon's timers, so it must not share or load
        // the lanes being measured.
        let clientsLane = try PreciseTimer(
            configuration: .init(threadName: "clients", logger: Logger(label: "example-daemon.timers.clients")))

        let store = SessionStore(
            count: self.sessions, expiry: self.expiry, tolerance: self.expiryTolerance, lane: sessionsLane)
        let heartbeat = Heartbeat(interval: self.heartbeat)
        let openStarted = ContinuousClock.now
        try store.open()
        try heartbeat.start(on: heartbeatLane)
        // The roll-up runs beside the heartbeat: a calendar job is light, and it must not wait
        // behind a bulk expiry either.
        let rollUp = RollUp(schedule: try CalendarSchedule(self.rollup), store: store)
        try rollUp.start(on: heartbeatLane)
        logger.info(
            "started",
            metadata: [
                "sessions": "\(self.sessions)", "touch-rate": "\(self.touchRate)/s",
                "expiry": "\(Format.short(self.expiry))", "expiry-tolerance": "\(Format.short(self.expiryTolerance))",
                "heartbeat": "\(Format.short(self.heartbeat))", "rollup": "\(rollUp.schedule)",
                "lanes": "\(self.singleLane ? "sessions" : "sessions+heartbeat")+clients",
                "open": "\(Format.short(ContinuousClock.now - openStarted))",
            ])

        let sessionService = SessionService(
            store: store, heartbeat: heartbeat,
            driver: TouchDriver(store: store, rate: self.touchRate, lane: clientsLane),
            statsInterval: self.statsInterval, runLength: self.duration,
            lanes: self.singleLane ? "shared" : "own lane", sessionWakeUps: sessionWakeUps,
            sessionsCPU: ThreadCPUTime(threadName: sessionsLane.configuration.threadName), logger: logger)

        // Timer services first: a ServiceGroup stops its services in reverse order, so the
        // sessions service stops (it stops the touches, then prints its final line) while the
        // timers still run, and the timers stop last. The clients lane comes after the lanes it
        // touches, so it stops before them: no touch meets a sessions lane already shut down.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: sessionsLane)]
        if !self.singleLane {
            services.append(.init(service: heartbeatLane))
        }
        services.append(.init(service: clientsLane))
        services.append(.init(service: sessionService, successTerminationBehavior: .gracefullyShutdownGroup))
        var configuration = ServiceGroupConfiguration(services: services, logger: logger)
        configuration.gracefulShutdownSignals = [.sigterm, .sigint]
        let group = ServiceGroup(configuration: configuration)

        try await group.run()
        let stopping = ContinuousClock.now - (sessionService.previous.stoppedAt ?? ContinuousClock.now)
        logger.info("stopped", metadata: ["after-shutdown-began": "\(Format.short(stopping))"])
    }
}

/// `10s`, `500ms`, `250us` (or `µs`), `100ns`; a bare number is seconds.
func parseDuration(_ text: String) throws -> Duration {
    let units: [(suffix: String, scale: Double)] = [
        ("ns", 1e-9), ("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("s", 1),
    ]
    let unit = units.first { text.hasSuffix($0.suffix) } ?? ("", 1)
    guard let value = Double(text.dropLast(unit.suffix.count)), value.isFinite, value >= 0,
        value * unit.scale < 1e9
    else {
        throw ValidationError("'\(text)' is not a duration (e.g. 10s, 500ms, 250us)")
    }
    return .nanoseconds(Int64((value * unit.scale * 1e9).rounded(.up)))
}
