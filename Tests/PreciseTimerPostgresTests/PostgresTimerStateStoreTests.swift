import Glibc
import PostgresNIO
import PreciseTimerCalendar
import PreciseTimerCore
import PreciseTimerPostgres
import PreciseTimerTesting
import Testing

/// Against a real PostgreSQL (`scripts/with-postgres`; CI runs them there). Without
/// PRECISE_TIMER_POSTGRES_URL the suite is skipped with one line saying how to run it.
@Suite(.enabled(if: PostgresServer.isAvailable, PostgresServer.howToRun))
struct PostgresTimerStateStoreTests {
    @Test func migrateIsIdempotentAndSafeFromConcurrentReplicas() async throws {
        let table = PostgresServer.freshTable("migrate")
        try await PostgresServer.withClient { client in
            let store = try PostgresTimerStateStore(client: client, table: table)
            // Every replica migrates at start, at the same moment: a bare CREATE TABLE IF NOT EXISTS
            // fails here with a unique violation in pg_type.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { try await store.migrate() } }
                try await group.waitForAll()
            }
            try await store.migrate()
            #expect(try await store.claim(WallClockInstant(nanosecondsSinceEpoch: 1), of: "unit"))
            try await store.migrate()
            // The rows survive a migration.
            #expect(try await store.lastTrigger(of: "unit") == WallClockInstant(nanosecondsSinceEpoch: 1))
            try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
        }
    }

    @Test func claimIsTrueOnceThenFalse() async throws {
        try await PostgresServer.withStore("once") { (store: PostgresTimerStateStore, _: PostgresClient) async throws in
            let occurrence = WallClockInstant(nanosecondsSinceEpoch: 1_800_000_000_000_000_000)
            #expect(try await store.claim(occurrence, of: "backup"))
            #expect(try await !store.claim(occurrence, of: "backup"))
            #expect(try await !store.claim(occurrence, of: "backup"))
            // Another unit's same instant is its own occurrence.
            #expect(try await store.claim(occurrence, of: "cleanup"))
        }
    }

    @Test func anOccurrenceNotAfterTheLastTriggerIsRefusedAsTheDirectoryStoreRefusesIt() async throws {
        let directory = try TestFiles.temporaryDirectory(prefix: "precise-timer-postgres-test", units: false)
        defer { TestFiles.remove(directory) }
        let reference = try DirectoryTimerStateStore(directory: directory)
        try await PostgresServer.withStore("order") {
            (store: PostgresTimerStateStore, _: PostgresClient) async throws in
            let instants = [20, 10, 20, 30, 25, 30, 31].map { WallClockInstant(nanosecondsSinceEpoch: $0) }
            var answers: [Bool] = []
            for instant in instants {
                let answer = try await store.claim(instant, of: "unit")
                #expect(try await reference.claim(instant, of: "unit") == answer, "at \(instant)")
                answers.append(answer)
            }
            #expect(answers == [true, false, false, true, false, false, true])
            #expect(try await store.lastTrigger(of: "unit") == WallClockInstant(nanosecondsSinceEpoch: 31))
        }
    }

    @Test func lastTriggerIsTheLatestClaimToTheNanosecond() async throws {
        try await PostgresServer.withStore("last") { (store: PostgresTimerStateStore, _: PostgresClient) async throws in
            #expect(try await store.lastTrigger(of: "never") == nil)
            let first = WallClockInstant(nanosecondsSinceEpoch: 1_764_000_000_123_456_789)
            let second = first.advanced(by: .nanoseconds(1))
            #expect(try await store.claim(first, of: "precise"))
            #expect(try await store.lastTrigger(of: "precise") == first)
            #expect(try await store.claim(second, of: "precise"))
            #expect(try await store.lastTrigger(of: "precise") == second)
            // Before the epoch, and IDs SQL would choke on if they were spliced in.
            let odd: TimerID = "it's; DROP TABLE x; -- ünïcode"
            let early = WallClockInstant(nanosecondsSinceEpoch: -1_000_000_007)
            #expect(try await store.claim(early, of: odd))
            #expect(try await store.lastTrigger(of: odd) == early)
            #expect(try await store.lastTrigger(of: "precise") == second)
        }
    }

    @Test func concurrentClaimersGetExactlyOneTruePerOccurrence() async throws {
        // 3 clients (a replica each) × 8 tasks × 500 occurrences of one unit, every task claiming
        // every occurrence in order, as replicas firing the same schedule do.
        let clients = 3
        let tasksPerClient = 8
        let occurrences = 500
        let table = PostgresServer.freshTable("race")
        let wins = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<clients {
                group.addTask {
                    try await PostgresServer.withClient { client in
                        let store = try PostgresTimerStateStore(client: client, table: table)
                        try await store.migrate()
                        return try await withThrowingTaskGroup(of: [Int].self) { tasks in
                            for _ in 0..<tasksPerClient {
                                tasks.addTask {
                                    var won: [Int] = []
                                    for index in 0..<occurrences {
                                        let instant = WallClockInstant(nanosecondsSinceEpoch: Int64(index) * 1_000)
                                        if try await store.claim(instant, of: "fleet") { won.append(index) }
                                    }
                                    return won
                                }
                            }
                            return try await tasks.reduce(into: []) { $0 += $1 }
                        }
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(wins.count == occurrences)
        #expect(Set(wins) == Set(0..<occurrences))
        try await PostgresServer.withClient { client in
            #expect(try await PostgresServer.rowCount(table, on: client) == occurrences)
            try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
        }
    }

    @Test func pruneRunsDeletesOldRowsButKeepsEachUnitsLatest() async throws {
        let table = PostgresServer.freshTable("prune")
        try await PostgresServer.withClient { client in
            let store = try PostgresTimerStateStore(client: client, table: table)
            try await store.migrate()
            let now = wallClockNow()
            let days = [-3, -2, -1].map { now.advanced(by: .seconds(86_400 * $0)) }
            for day in days { #expect(try await store.claim(day, of: "daily")) }
            #expect(try await store.claim(days[0], of: "once-long-ago"))
            let recent = now.advanced(by: .seconds(-60))
            #expect(try await store.claim(days[0], of: "busy"))
            #expect(try await store.claim(recent, of: "busy"))
            #expect(try await PostgresServer.rowCount(table, on: client) == 6)

            // daily's -3 d and -2 d and busy's -3 d go; each unit's latest stays, old or not.
            #expect(try await store.pruneRuns(olderThan: .seconds(3_600)) == 3)
            #expect(try await PostgresServer.rowCount(table, on: client) == 3)
            #expect(try await store.lastTrigger(of: "daily") == days[2])
            #expect(try await store.lastTrigger(of: "once-long-ago") == days[0])
            #expect(try await store.lastTrigger(of: "busy") == recent)
            // Pruned occurrences stay refused: the latest still says the unit is past them.
            #expect(try await !store.claim(days[1], of: "daily"))
            #expect(try await store.pruneRuns(olderThan: .seconds(3_600)) == 0)
            #expect(try await store.pruneRuns(olderThan: .zero) == 0)

            await #expect(throws: PreciseTimerError.self) { try await store.pruneRuns(olderThan: .seconds(-1)) }
            await #expect(throws: PreciseTimerError.self) {
                try await store.pruneRuns(olderThan: .seconds(Int64.max))
            }
            try await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
        }
    }

    @Test func aDatabaseThatIsDownMakesClaimsThrowNeverReturnTrue() async throws {
        // A loopback port nobody listens on: the claim waits for a connection until its caller
        // cancels it (the store's own timeout, tested below, is set out of the way here: a test
        // task on a loaded machine may resume long after the second it sleeps).
        let port = try #require(Self.unusedPort())
        try await PostgresServer.withClient(port: port) { client in
            let store = try PostgresTimerStateStore(client: client, timeout: .seconds(3_600))
            let claim = Task {
                try await store.claim(WallClockInstant(nanosecondsSinceEpoch: 1), of: "unit")
            }
            try await Task.sleep(for: .seconds(1))
            claim.cancel()
            let result = await claim.result
            let thrown = try #require(throws: PreciseTimerError.self) { try result.get() }
            #expect(thrown.code == .systemFailure)
            #expect(thrown.id == "unit")
            #expect(thrown.function == "PostgresClient.query")
            #expect(thrown.value == "precise_timer_runs")
        }
    }

    @Test func aDatabaseThatIsDownTimesOutWithinTheStoresTimeout() async throws {
        let port = try #require(Self.unusedPort())
        try await PostgresServer.withClient(port: port) { client in
            let store = try PostgresTimerStateStore(client: client, timeout: .milliseconds(500))
            let thrown = await #expect(throws: PreciseTimerError.self) {
                try await store.claim(WallClockInstant(nanosecondsSinceEpoch: 1), of: "unit")
            }
            // The store's timeout ended it: PostgresNIO alone fails after about a minute with
            // `.systemFailure`. (No wall-clock bound: the test task may resume late.)
            #expect(thrown?.code == .timedOut)
            #expect(thrown?.id == "unit")
            #expect(thrown?.value == "precise_timer_runs")
            #expect(throws: PreciseTimerError.self) { try PostgresTimerStateStore(client: client, timeout: .zero) }
        }
    }

    /// A loopback port that was free a moment ago.
    static func unusedPort() -> Int? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }
}

/// No server needed: names are checked before anything is sent.
@Suite struct PostgresTimerStateStoreNameTests {
    /// A client never run: nothing reaches a server.
    static func idleClient() -> PostgresClient {
        PostgresClient(
            configuration: .init(host: "127.0.0.1", username: "u", password: nil, database: nil, tls: .disable))
    }

    static let refused = [
        "", "runs; DROP TABLE users", "\"runs\"", "Runs", "1runs", "a.b.c", ".runs", "runs.", "rüns", "runs-1",
        "runs ", String(repeating: "r", count: 64), "public." + String(repeating: "r", count: 64),
    ]

    @Test(arguments: Self.refused)
    func aTableNameThatIsNotAnIdentifierIsRefusedTyped(_ name: String) throws {
        let client = Self.idleClient()
        let error = try #require(throws: PreciseTimerError.self) {
            try PostgresTimerStateStore(client: client, table: name)
        }
        #expect(error.code == .invalidConfiguration)
        #expect(error.value == name)
    }

    @Test(arguments: ["precise_timer_runs", "_r1", "jobs.runs", String(repeating: "r", count: 63)])
    func aPlainOrSchemaQualifiedNameIsAccepted(_ name: String) throws {
        let client = Self.idleClient()
        #expect(try PostgresTimerStateStore(client: client, table: name).table == name)
    }

    @Test func aUnitIDWithANULCharacterIsRefusedTyped() async throws {
        let client = Self.idleClient()
        let store = try PostgresTimerStateStore(client: client)
        // Refused before any connection is asked for (the client is not even running).
        let error = await #expect(throws: PreciseTimerError.self) {
            try await store.claim(WallClockInstant(nanosecondsSinceEpoch: 1), of: "a\u{0}b")
        }
        #expect(error?.code == .invalidConfiguration)
    }
}
