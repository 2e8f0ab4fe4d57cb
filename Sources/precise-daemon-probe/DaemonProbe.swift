#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Logging
import PreciseTimer
import PreciseTimerServiceLifecycle
import ServiceLifecycle
import UnixSignals

/// `precise-daemon-probe [--no-hold]`: the shape of a daemon that a SIGTERM during its start used
/// to kill (before ``EarlySignals``), for the test that stops it with SIGTERM at random moments
/// of its start. A `ServiceGroup` of two
/// `PreciseTimer` services, each with a 1 ms repeating timer, and a stand-in for a Hummingbird
/// server: a nested group without signals whose server waits for graceful shutdown, as
/// Hummingbird's `Application` runs its server.
///
/// It writes `started` to stdout once it holds its shutdown signals (``EarlySignals``), stops
/// gracefully on SIGTERM or SIGINT and exits 0; an error exits 1. `--no-hold` skips the hold, to
/// show what an early signal does without it (the default action: killed by the signal).
@main
struct DaemonProbe {
    static func main() async {
        if !CommandLine.arguments.contains("--no-hold") {
            EarlySignals.hold()
        }
        _ = "started\n".withCString { write(STDOUT_FILENO, $0, strlen($0)) }
        do {
            let logger = Logger(label: "precise-daemon-probe") { _ in SwiftLogNoOpLogHandler() }
            let timers = try PreciseTimer(
                configuration: .init(threadName: "probe-timers", shutdownGracePeriod: .seconds(2)))
            let sessions = try PreciseTimer(
                configuration: .init(threadName: "probe-sessions", shutdownGracePeriod: .seconds(2)))
            for lane in [timers, sessions] {
                try lane.scheduleRepeating(every: .milliseconds(1)) { _ in }
            }
            let server = ServiceGroup(
                configuration: .init(services: [ServerStandIn(timers: sessions)], logger: logger))
            // Timers first: they stop last, after the server that uses them.
            var configuration = ServiceGroupConfiguration(
                services: [.init(service: timers), .init(service: sessions), .init(service: server)], logger: logger)
            configuration.gracefulShutdownSignals = [.sigterm, .sigint]
            try await ServiceGroup(configuration: configuration).run()
            exit(0)
        } catch {
            _ = "precise-daemon-probe: \(error)\n".withCString { write(STDERR_FILENO, $0, strlen($0)) }
            exit(1)
        }
    }
}

/// Waits for graceful shutdown as a server does (Hummingbird's `Server.run` ends on
/// `withTaskCancellationOrGracefulShutdownHandler`), then uses the timers once more, as its last
/// requests would.
struct ServerStandIn: Service {
    let timers: PreciseTimer

    func run() async throws {
        let stop = AsyncStream<Void>.makeStream()
        try await withTaskCancellationOrGracefulShutdownHandler {
            for await _ in stop.stream {}
            try self.timers.schedule(after: .milliseconds(1)) { _ in }
        } onCancelOrGracefulShutdown: {
            stop.continuation.finish()
        }
    }
}
