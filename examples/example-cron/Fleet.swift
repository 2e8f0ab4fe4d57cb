import Logging
import PreciseTimerCalendar

#if !PRECISE_TIMER_NO_POSTGRES
    import PostgresNIO
    import PreciseTimerCore
    import PreciseTimerPostgres
#endif

/// `--postgres URL`: the runner as one replica of a fleet. Every replica schedules every unit and
/// claims each occurrence in one PostgreSQL table (`PostgresTimerStateStore`); the replica whose
/// claim inserts the row runs it, the others skip it. The claims replace the stamp files of
/// `--state`, and `Persistent=` catch-up reads the fleet's latest claim.
///
/// Built without it (`PRECISE_TIMER_NO_POSTGRES`, set by Package.swift for the sanitizer builds,
/// which leave postgres-nio out), `--postgres` fails at start.
enum Fleet {
    struct URLError: Error, CustomStringConvertible {
        var description: String
    }

    #if PRECISE_TIMER_NO_POSTGRES
        static func withStore<T: Sendable>(
            url: String, table: String, retention: Duration?, logger: Logger,
            _ body: @Sendable (any TimerStateStore) async throws -> T
        ) async throws -> T {
            throw URLError(description: "--postgres: this example-cron was built without PreciseTimerPostgres")
        }
    #else
        /// Runs `body` with a migrated store on a running client, then stops the client.
        ///
        /// The client's `run()` is a child task for as long as `body` runs (postgres-nio sends no
        /// query without it); `migrate()` is safe when every replica calls it at the same moment.
        /// With a `retention`, another child deletes the claims older than it (each unit's latest
        /// kept) at start and every hour: every replica may do it, deleting twice is harmless.
        static func withStore<T: Sendable>(
            url: String, table: String, retention: Duration?, logger: Logger,
            _ body: @Sendable (any TimerStateStore) async throws -> T
        ) async throws -> T {
            let client = PostgresClient(configuration: try Self.configuration(url), backgroundLogger: logger)
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask {
                    await client.run()
                    return nil
                }
                defer { group.cancelAll() }
                let store = try PostgresTimerStateStore(client: client, table: table)
                try await store.migrate()
                if let retention {
                    group.addTask {
                        await Self.prune(store, olderThan: retention, logger: logger)
                        return nil
                    }
                }
                return try await body(store)
            }
        }

        /// Deletes old claims now and every hour, until cancelled; a failure is logged and tried
        /// again an hour later.
        private static func prune(_ store: PostgresTimerStateStore, olderThan age: Duration, logger: Logger) async {
            while !Task.isCancelled {
                do {
                    let deleted = try await store.pruneRuns(olderThan: age)
                    logger.info("pruned old claims", metadata: ["deleted": "\(deleted)", "older-than": "\(age)"])
                } catch {
                    logger.warning("cannot prune old claims", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(3_600))
            }
        }

        /// `postgres://USER[:PASSWORD]@HOST[:PORT][/DATABASE]` (or `postgresql://`), without TLS: a
        /// loopback or private-network server, as `scripts/with-postgres` gives.
        static func configuration(_ url: String) throws(URLError) -> PostgresClient.Configuration {
            let schemes = ["postgres://", "postgresql://"]
            guard let scheme = schemes.first(where: { url.hasPrefix($0) }) else {
                throw URLError(description: "'\(url)' is not a postgres:// URL")
            }
            let rest = url.dropFirst(scheme.count)
            let parts = rest.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
            let credentials = parts.count == 2 ? String(parts[0]) : "postgres"
            let location = String(parts.count == 2 ? parts[1] : parts[0])
            let userAndPassword = credentials.split(separator: ":", maxSplits: 1).map(String.init)
            let hostAndDatabase = location.split(separator: "/", maxSplits: 1).map(String.init)
            guard let hostPort = hostAndDatabase.first, !userAndPassword.isEmpty else {
                throw URLError(description: "'\(url)' names no user or host")
            }
            let hostAndPort = hostPort.split(separator: ":", maxSplits: 1).map(String.init)
            var port = 5432
            if hostAndPort.count == 2 {
                guard let given = Int(hostAndPort[1]), (1...65_535).contains(given) else {
                    throw URLError(description: "'\(url)': '\(hostAndPort[1])' is not a port")
                }
                port = given
            }
            // The path is the database; a query string (`?sslmode=…`) is not read.
            let path = hostAndDatabase.count == 2 ? hostAndDatabase[1] : ""
            let database = path.split(separator: "?").first.map(String.init)
            return PostgresClient.Configuration(
                host: hostAndPort[0], port: port, username: userAndPassword[0],
                password: userAndPassword.count == 2 ? userAndPassword[1] : nil, database: database, tls: .disable)
        }
    #endif
}
