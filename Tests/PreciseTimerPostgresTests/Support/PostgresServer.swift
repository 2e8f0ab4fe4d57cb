import Glibc
import PostgresNIO
import PreciseTimerCore
import PreciseTimerPostgres
import Testing

/// The server the tests run against: `PRECISE_TIMER_POSTGRES_URL`, as `scripts/with-postgres` sets it
/// (`postgres://USER[:PASSWORD]@HOST:PORT/DATABASE`, no TLS).
enum PostgresServer {
    /// The one line a run without a server prints per suite.
    static let howToRun: Comment =
        "no PRECISE_TIMER_POSTGRES_URL: run `scripts/with-postgres scripts/with-libevent swift test` for a private PostgreSQL"

    static let url: String? = getenv("PRECISE_TIMER_POSTGRES_URL").map { String(cString: $0) }

    static var isAvailable: Bool { Self.url != nil }

    /// The variable's URL as a client configuration.
    static func configuration(port overriddenPort: Int? = nil) -> PostgresClient.Configuration {
        guard let url = Self.url, url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            fatalError("PRECISE_TIMER_POSTGRES_URL is not a postgres:// URL")
        }
        let rest = url.split(separator: "://", maxSplits: 1)[1]
        let (credentials, location) = {
            let parts = rest.split(separator: "@", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : ("postgres", String(parts[0]))
        }()
        let userAndPassword = credentials.split(separator: ":", maxSplits: 1).map(String.init)
        let hostAndDatabase = location.split(separator: "/", maxSplits: 1).map(String.init)
        let hostAndPort = hostAndDatabase[0].split(separator: ":").map(String.init)
        var configuration = PostgresClient.Configuration(
            host: hostAndPort[0], port: overriddenPort ?? (hostAndPort.count > 1 ? Int(hostAndPort[1]) ?? 5432 : 5432),
            username: userAndPassword[0], password: userAndPassword.count > 1 ? userAndPassword[1] : nil,
            database: hostAndDatabase.count > 1 ? hostAndDatabase[1] : nil, tls: .disable)
        configuration.options.maximumConnections = 8
        return configuration
    }

    /// Runs `body` with a running client, then stops it.
    static func withClient<T: Sendable>(
        port: Int? = nil, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let client = PostgresClient(configuration: Self.configuration(port: port))
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    /// A table name of its own for one test, so tests and runs never share rows.
    static func freshTable(_ label: String) -> String {
        "precise_test_\(label)_\(UInt32.random(in: .min ... .max))"
    }

    /// Runs `body` with a migrated store on a fresh table of a running client; drops the table after.
    static func withStore<T: Sendable>(
        _ label: String, _ body: @Sendable (PostgresTimerStateStore, PostgresClient) async throws -> T
    ) async throws -> T {
        let table = Self.freshTable(label)
        return try await Self.withClient { client in
            let store = try PostgresTimerStateStore(client: client, table: table)
            try await store.migrate()
            let result = try await body(store, client)
            try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
            return result
        }
    }

    /// The rows of a table, counted.
    static func rowCount(_ table: String, on client: PostgresClient) async throws -> Int {
        let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")).collect()
        return Int(try rows[0].decode(Int64.self))
    }
}

/// The wall clock now, read as the schedules read it.
func wallClockNow() -> WallClockInstant {
    WallClockInstant(nanosecondsSinceEpoch: wallClockNanoseconds())
}
