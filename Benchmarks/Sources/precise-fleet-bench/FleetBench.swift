import ArgumentParser
import Foundation
import Histogram
import PostgresNIO
import PreciseTimerCalendar
import PreciseTimerCore
import PreciseTimerPostgres

/// `precise-fleet-bench`: what a shared ``PostgresTimerStateStore`` costs, against a real server.
///
/// - `latency`: the claim round trip on loopback, one claimer at a time, then three replicas (three
///   clients) claiming the same occurrence at the same moment, as a fleet does at each elapse.
/// - `fleet`: `--units` units elapsing every second for `--seconds` seconds, each occurrence claimed
///   by `--clients` replicas: whether the claims keep up, the rows a day, the database's CPU (from
///   `/proc/<pid>/stat` of every `postgres` process), and the time a prune takes.
///
/// Run by hand, never in CI:
///
///     scripts/with-postgres scripts/with-libevent swift run -c release --package-path Benchmarks precise-fleet-bench
@main
struct FleetBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "precise-fleet-bench",
        abstract: "Claim round trip and fleet load of PostgresTimerStateStore (needs PRECISE_TIMER_POSTGRES_URL)."
    )

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case latency, fleet, all
    }

    @Option(help: "latency, fleet or all.")
    var mode: Mode = .all

    @Option(help: "Sequential claims in the latency run.")
    var claims = 5_000

    @Option(help: "Rounds of contended claims (every replica claims the same occurrence) in the latency run.")
    var rounds = 2_000

    @Option(help: "Replicas (PostgresClients, each its own connection pool).")
    var clients = 3

    @Option(help: "Units elapsing every second in the fleet run.")
    var units = 1_000

    @Option(help: "Length of the fleet run, in seconds.")
    var seconds = 60

    @Option(help: "Connections per client.")
    var connections = 8

    func run() async throws {
        guard let url = ProcessInfo.processInfo.environment["PRECISE_TIMER_POSTGRES_URL"] else {
            throw ValidationError("PRECISE_TIMER_POSTGRES_URL is not set: run under scripts/with-postgres")
        }
        let configuration = try Self.configuration(url: url, connections: self.connections)
        let replicas = (0..<self.clients).map { _ in PostgresClient(configuration: configuration) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in replicas { group.addTask { await client.run() } }
            defer { group.cancelAll() }
            if self.mode != .fleet { try await self.latency(replicas) }
            if self.mode != .latency { try await self.fleet(replicas) }
        }
    }

    /// A fresh table, migrated, for one run; the same name for every replica.
    func stores(_ replicas: [PostgresClient], label: String) async throws -> [PostgresTimerStateStore] {
        let table = "precise_bench_\(label)_\(UInt32.random(in: .min ... .max))"
        let stores = try replicas.map { try PostgresTimerStateStore(client: $0, table: table) }
        try await stores[0].migrate()
        return stores
    }

    func latency(_ replicas: [PostgresClient]) async throws {
        let stores = try await self.stores(replicas, label: "latency")
        let clock = ContinuousClock()
        // Warm-up: connections opened, statements planned.
        for index in 0..<200 {
            _ = try await stores[0].claim(WallClockInstant(nanosecondsSinceEpoch: Int64(index)), of: "warm-up")
        }
        var sequential = Self.histogram()
        for index in 0..<self.claims {
            let occurrence = WallClockInstant(nanosecondsSinceEpoch: Int64(index))
            let start = clock.now
            let won = try await stores[0].claim(occurrence, of: "sequential")
            sequential.record(Self.nanoseconds(start.duration(to: clock.now)))
            precondition(won, "a fresh occurrence was refused")
        }
        Self.report("claim round trip, one claimer (\(self.claims) claims)", sequential)

        var winners = Self.histogram()
        var losers = Self.histogram()
        var roundsWithoutOneWinner = 0
        for round in 0..<self.rounds {
            let occurrence = WallClockInstant(nanosecondsSinceEpoch: Int64(round))
            let start = clock.now
            let answers = try await withThrowingTaskGroup(of: (Bool, Duration).self) { group in
                for store in stores {
                    group.addTask {
                        let won = try await store.claim(occurrence, of: "contended")
                        return (won, start.duration(to: clock.now))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let wins = answers.filter(\.0)
            if wins.count != 1 { roundsWithoutOneWinner += 1 }
            for (won, elapsed) in answers {
                if won { winners.record(Self.nanoseconds(elapsed)) } else { losers.record(Self.nanoseconds(elapsed)) }
            }
        }
        Self.report("winner, \(stores.count) replicas claiming one occurrence (\(self.rounds) rounds)", winners)
        Self.report("losers, same rounds", losers)
        print("rounds without exactly one winner: \(roundsWithoutOneWinner)")
    }

    func fleet(_ replicas: [PostgresClient]) async throws {
        let stores = try await self.stores(replicas, label: "fleet")
        let units = (0..<self.units).map { TimerID("unit-\($0)") }
        let clock = ContinuousClock()
        // Warm-up: every connection of every pool opened before the CPU is sampled (a backend
        // that exits takes its CPU time with it).
        try await self.claimAll(stores, units, at: WallClockInstant(nanosecondsSinceEpoch: 0), clock: clock)

        let cpuBefore = PostgresCPU.sample()
        let wallBefore = clock.now
        var behind = Self.histogram()  // last claim of a second, after its occurrence
        var winnerDelay = Self.histogram()  // each winning claim, after its occurrence
        var wins = 0
        var losses = 0
        var overrun = 0
        var next = Self.nextSecond()
        for _ in 0..<self.seconds {
            try await Self.sleep(until: next)
            let result = try await self.claimAll(stores, units, at: next, clock: clock)
            wins += result.wins
            losses += result.losses
            for delay in result.winnerDelays { winnerDelay.record(delay) }
            let last = Self.nanosecondsSince(next)
            behind.record(last)
            if last > 1_000_000_000 { overrun += 1 }
            next = next.advanced(by: .seconds(1))
            // A second whose claims ran past the next elapse: catch up from the grid (a backlog).
            while Self.nanosecondsSince(next) > 0 { next = next.advanced(by: .seconds(1)) }
        }
        let wall = wallBefore.duration(to: clock.now)
        let cpu = PostgresCPU.sample() - cpuBefore

        let rows = try await Self.scalar(replicas[0], "SELECT count(*) FROM \(stores[0].table)")
        let bytes = try await Self.scalar(
            replicas[0], "SELECT pg_total_relation_size('\(stores[0].table)')")
        let expected = self.units * self.seconds
        print("")
        print("fleet: \(self.units) units every second for \(self.seconds) s, \(stores.count) replicas")
        print("occurrences claimed: \(wins) of \(expected) (\(wins - expected) extra); refused: \(losses)")
        Self.report("last claim of each second, after the second's elapse", behind)
        Self.report("each winning claim, after its elapse", winnerDelay)
        print("seconds whose claims ran past the next elapse: \(overrun)")
        let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        print(
            "database CPU: \(String(format: "%.2f", cpu)) s in \(String(format: "%.1f", seconds)) s"
                + " = \(String(format: "%.1f", 100 * cpu / seconds)) % of one core (\(PostgresCPU.processes()) postgres processes)"
        )
        let rowsPerDay = Double(self.units) * 86_400
        let bytesPerRow = Double(bytes) / Double(max(rows, 1))
        print(
            "rows: \(rows) (+\(self.units) warm-up); a day: \(Int(rowsPerDay)) rows,"
                + " \(String(format: "%.1f", rowsPerDay * bytesPerRow / 1e9)) GB at \(Int(bytesPerRow)) bytes a row"
                + " (table and index)")
        let pruneStart = clock.now
        let pruned = try await stores[0].pruneRuns(olderThan: .seconds(self.seconds / 2))
        print("pruneRuns(olderThan: \(self.seconds / 2) s): \(pruned) rows in \(pruneStart.duration(to: clock.now))")
    }

    struct Round {
        var wins = 0
        var losses = 0
        var winnerDelays: [UInt64] = []
    }

    /// Every replica claims every unit's occurrence at `occurrence`, all at once (each pool queues
    /// what its connections cannot run yet).
    @discardableResult
    func claimAll(
        _ stores: [PostgresTimerStateStore], _ units: [TimerID], at occurrence: WallClockInstant,
        clock: ContinuousClock
    ) async throws -> Round {
        try await withThrowingTaskGroup(of: (Bool, UInt64).self) { group in
            for store in stores {
                for unit in units {
                    group.addTask {
                        let won = try await store.claim(occurrence, of: unit)
                        return (won, Self.nanosecondsSince(occurrence))
                    }
                }
            }
            var round = Round()
            for try await (won, delay) in group {
                if won {
                    round.wins += 1
                    round.winnerDelays.append(delay)
                } else {
                    round.losses += 1
                }
            }
            return round
        }
    }

    static func histogram() -> Histogram<UInt64> {
        Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    }

    static func report(_ label: String, _ histogram: Histogram<UInt64>) {
        func ms(_ percentile: Double) -> String {
            String(format: "%.3f ms", Double(histogram.valueAtPercentile(percentile)) / 1e6)
        }
        print(
            "\(label): p50 \(ms(50)), p99 \(ms(99)), p99.9 \(ms(99.9)),"
                + " max \(String(format: "%.3f ms", Double(histogram.max) / 1e6)), n \(histogram.totalCount)")
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }

    static func wallClockNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    static func nanosecondsSince(_ instant: WallClockInstant) -> UInt64 {
        UInt64(max(0, Self.wallClockNow() - instant.nanosecondsSinceEpoch))
    }

    static func nextSecond() -> WallClockInstant {
        WallClockInstant(nanosecondsSinceEpoch: (Self.wallClockNow() / 1_000_000_000 + 1) * 1_000_000_000)
    }

    static func sleep(until instant: WallClockInstant) async throws {
        let left = instant.nanosecondsSinceEpoch - Self.wallClockNow()
        if left > 0 { try await Task.sleep(for: .nanoseconds(left)) }
    }

    static func scalar(_ client: PostgresClient, _ sql: String) async throws -> Int {
        let rows = try await client.query(PostgresQuery(unsafeSQL: sql)).collect()
        return Int(try rows[0].decode(Int64.self))
    }

    /// `postgres://USER[:PASSWORD]@HOST:PORT/DATABASE`, as scripts/with-postgres sets it.
    static func configuration(url: String, connections: Int) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), let host = components.host else {
            throw ValidationError("not a postgres:// URL: \(url)")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : nil
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: database, tls: .disable)
        configuration.options.maximumConnections = connections
        configuration.options.minimumConnections = connections
        return configuration
    }
}

/// The CPU time of every process named `postgres` (the postmaster, its backends and workers), from
/// `/proc/<pid>/stat`: user and system time, in seconds.
enum PostgresCPU {
    static func sample() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return Self.stats().reduce(0) { $0 + Double($1.utime + $1.stime) / ticks }
    }

    static func processes() -> Int { Self.stats().count }

    static func stats() -> [(utime: Int, stime: Int)] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in
            guard Int(entry) != nil, let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
                stat[stat.index(after: open)..<close] == "postgres"
            else { return nil }
            // After "(comm) ": state is field 3; utime and stime are fields 14 and 15.
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 13, let utime = Int(fields[11]), let stime = Int(fields[12]) else { return nil }
            return (utime, stime)
        }
    }
}
