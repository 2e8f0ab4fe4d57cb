import PostgresNIO
import PreciseTimerCalendar
import PreciseTimerCore

/// A ``/PreciseTimerCalendar/TimerStateStore`` in a PostgreSQL table: the replicas of a fleet that
/// share the table run each occurrence of a unit once, whichever of them fires first.
///
/// ```swift
/// let client = PostgresClient(configuration: configuration)
/// let store = try PostgresTimerStateStore(client: client)
/// // client.run() runs in a task (or a ServiceGroup) for as long as the store is used.
/// try await store.migrate()
/// if try await store.claim(occurrence, of: "nightly-cleanup") {
///     // This replica, and no other sharing the table, runs tonight's cleanup.
/// }
/// ```
///
/// Every replica computes the same occurrences (they depend on the schedule, its time zone and a
/// fixed delay, never on the host) and fires each at its instant; each then asks the store, and the
/// one whose claim inserts the row runs it. No leader, no lease to renew, no polling: one statement
/// per occurrence and replica, a round trip on the network.
///
/// **The table.** One row per claimed occurrence: `unit` (the ``/PreciseTimerCore/TimerID``'s raw
/// value), `occurrence` (nanoseconds since the Unix epoch, `bigint`), `claimed_at` (the database's
/// clock at the claim, for operators: `claimed_at` minus `occurrence` is how late the winning replica
/// asked). The primary key is (`unit`, `occurrence`). ``migrate()`` creates it; old rows are deleted by
/// ``pruneRuns(olderThan:)``, which keeps each unit's latest.
///
/// **Claims.** ``claim(_:of:)`` is one statement in its own (implicit) transaction:
///
/// ```sql
/// INSERT INTO runs (unit, occurrence) SELECT $1, $2
/// WHERE NOT EXISTS (SELECT 1 FROM runs WHERE unit = $1 AND occurrence >= $2)
/// ON CONFLICT (unit, occurrence) DO NOTHING RETURNING true
/// ```
///
/// As ``/PreciseTimerCalendar/DirectoryTimerStateStore`` does, it succeeds only for an occurrence after
/// the unit's last trigger: never twice for one occurrence (the primary key: of two replicas inserting
/// the same row at once, the second waits for the first and then does nothing), and never for an older
/// occurrence once a newer one was claimed before the call began. Two claims of *different*
/// occurrences of one unit that run at the same moment may both succeed (neither sees the other's
/// uncommitted row); that is the answer the directory store gives when the older one takes the lock
/// first, so the calls stay as if they had run one after the other, the older first.
///
/// **What "once" means.** At most once per (unit, occurrence), not at least once:
/// - A replica told `true` owns the occurrence. If it dies before or inside its handler (a crash,
///   SIGKILL, a lost host), the occurrence is not handed to another replica: the row says it was
///   claimed, and nobody can tell "ran" from "died running" without a second write after the handler.
/// - A claim that throws did not tell the caller to run; the row may still have been written (the
///   connection dropped after the insert), and the occurrence is then lost, never run twice.
/// - At-least-once is built on top: make the job idempotent (keyed by the unit and the occurrence,
///   e.g. `INSERT … ON CONFLICT DO NOTHING` of its own result) and record its completion; a job that
///   finds the previous occurrence not completed at its next run (or a sweeper that does) redoes it.
/// - The database must keep what it acknowledged: `synchronous_commit` on (the default), and a
///   failover only to a standby that had the commit (synchronous replication). A claim acknowledged
///   and then lost by the database can be claimed again, and would run twice. The claim relies on the
///   default isolation, READ COMMITTED (a `default_transaction_isolation` of SERIALIZABLE adds
///   failures at commit that a single statement does not need).
///
/// **Clocks.** Occurrences are computed by each replica from its own wall clock, so the hosts must be
/// NTP-synchronized (chrony or systemd-timesyncd: milliseconds apart, usually far less). Skew does
/// not make an occurrence run twice (every replica names it with the same instant, from the schedule,
/// not from its clock) but moves who fires first: a replica whose clock runs ahead fires, and claims,
/// early by its skew. A replica whose clock runs behind by more than one period claims an occurrence
/// after a fast replica has claimed the next one: refused, so nothing runs twice, but a slow replica
/// never wins. The database's clock is used only for `claimed_at` and ``pruneRuns(olderThan:)``.
///
/// **Errors.** Every call throws ``/PreciseTimerCore/PreciseTimerError``:
/// ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration`` for a bad table name (at `init`)
/// or a unit ID PostgreSQL's `text` cannot hold (a NUL character);
/// ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` when the database call fails (no
/// connection, a server error, the calling task cancelled): `function` names the call
/// (`PostgresClient.query`), `value` the table, and `detail` PostgresNIO's error code with, for a
/// server error, the SQLSTATE and the server's message;
/// ``/PreciseTimerCore/PreciseTimerError/Code/timedOut`` when the database did not answer within
/// the store's `timeout`.
///
/// - Important: The `PostgresClient` must be running (its `run()` in a task, or in a
///   `ServiceGroup`) for as long as the store is used; calls wait for a connection until then. While
///   the database is unreachable, PostgresNIO keeps a call waiting for a connection (up to a minute,
///   its circuit breaker) before it fails: the store bounds every call by its `timeout` instead, and
///   the calls also observe task cancellation.
public struct PostgresTimerStateStore: TimerStateStore {
    /// The table, as given to ``init(client:table:timeout:)``: a table name, optionally qualified by a schema.
    public let table: String

    /// The longest a call waits for the database (see ``init(client:table:timeout:)``).
    public let timeout: Duration

    private let client: PostgresClient
    private let statements: Statements

    /// Creates a store on a table of the database `client` connects to.
    ///
    /// Nothing is sent to the database: call ``migrate()`` once at start (from every replica: it is
    /// safe to run concurrently) to create the table.
    ///
    /// - Parameters:
    ///   - client: A PostgresNIO client; the caller runs it (`run()`) and owns its lifetime.
    ///   - table: The table's name: lowercase ASCII letters, digits and `_`, not starting with a digit,
    ///     at most 63 bytes (PostgreSQL's identifier limit), optionally `schema.table` with a schema
    ///     named alike. Names are matched exactly, never interpolated unchecked into SQL.
    ///   - timeout: The longest a call waits for the database before it throws
    ///     ``/PreciseTimerCore/PreciseTimerError/Code/timedOut`` (the query is cancelled). While the
    ///     database is unreachable PostgresNIO would keep a call waiting for a connection for up to a
    ///     minute; bounded, a unit's claim fails sooner, is retried within the occurrence's
    ///     `AccuracySec=`, and holds the unit's next occurrences back no longer than this. Default:
    ///     30 seconds, far above a first connection's set-up on a loaded host (5 s was not, in this
    ///     package's own test suite). Set it below the `AccuracySec=` of the units that share the
    ///     store. A claim that timed out may still have been written: that occurrence is then lost,
    ///     never run twice (see the type's notes on what "once" means).
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError`` with code
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration`` when `table` is not such a
    ///   name (`value` holds it, `detail` says what is wrong), or `timeout` is not positive.
    public init(
        client: PostgresClient, table: String = "precise_timer_runs", timeout: Duration = .seconds(30)
    ) throws(PreciseTimerError) {
        guard timeout > .zero else {
            throw PreciseTimerError(
                .invalidConfiguration, id: nil, value: "\(timeout)", detail: "the timeout must be positive")
        }
        self.table = table
        self.timeout = timeout
        self.client = client
        self.statements = Statements(table: try TableName(table))
    }

    /// `true`: the replicas of a fleet, on any machines, share the table, so a unit with
    /// `FixedRandomDelay=` gets one delay for the unit alone, the same on every replica, and every
    /// replica names the same occurrences (see ``/PreciseTimerCalendar/TimerUnit/fixedRandomDelay``).
    public var isSharedAcrossMachines: Bool { true }

    /// Creates the table if it is missing.
    ///
    /// Idempotent, and safe when every replica calls it at the same moment: the `CREATE TABLE IF NOT
    /// EXISTS` runs under a transaction-scoped advisory lock (PostgreSQL's own check is not safe
    /// against a concurrent creation of the same table). An existing table of that name is kept as it
    /// is, whatever its columns; one that is not this store's makes the other calls fail. The schema of
    /// a qualified name must exist.
    ///
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError`` with code
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` when the statement fails (no
    ///   connection, no `CREATE` privilege, no such schema).
    public func migrate() async throws(PreciseTimerError) {
        _ = try await self.run(self.statements.migrate(), id: nil)
    }

    /// The latest occurrence claimed for a unit, by any replica.
    ///
    /// - Parameter id: The unit's ID.
    /// - Returns: The unit's latest claimed occurrence, or `nil` when none was ever claimed (or the
    ///   unit's rows were deleted by hand).
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError``: see the type's notes on errors.
    public func lastTrigger(of id: TimerID) async throws(PreciseTimerError) -> WallClockInstant? {
        let rows = try await self.run(self.statements.lastTrigger(try Self.unit(id)), id: id)
        guard let row = rows.first else { return nil }
        let nanoseconds: Int64?
        do {
            nanoseconds = try row.decode(Int64?.self)
        } catch {
            throw Self.failure(error, id: id, table: self.table)
        }
        return nanoseconds.map { WallClockInstant(nanosecondsSinceEpoch: $0) }
    }

    /// Claims an occurrence of a unit for the caller, if no replica has claimed it or a later one.
    ///
    /// One statement (see the type's notes): the row is inserted, and the call returns `true`, only
    /// when no row of the unit holds `occurrence` or a later one.
    ///
    /// - Parameters:
    ///   - occurrence: The elapse the caller is about to run (the schedule's instant, which every
    ///     replica computes alike), stored to the nanosecond.
    ///   - id: The unit's ID.
    /// - Returns: `true` when this call inserted the row: the caller runs the occurrence. `false` when
    ///   the occurrence, or a later one of the unit, was claimed already.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError``: see the type's notes on errors. The caller
    ///   must not run the occurrence; the row may or may not have been written.
    public func claim(_ occurrence: WallClockInstant, of id: TimerID) async throws(PreciseTimerError) -> Bool {
        let query = self.statements.claim(try Self.unit(id), occurrence.nanosecondsSinceEpoch)
        return try await !self.run(query, id: id).isEmpty
    }

    /// Deletes the rows of occurrences older than `age`, keeping each unit's latest.
    ///
    /// The rows are the fleet's history (who claimed what, and when); only each unit's latest matters
    /// to the claims, and it is never deleted, so pruning never lets an old occurrence be claimed
    /// again. Run it from one replica or all, e.g. every few minutes from a timer: each call is one
    /// `DELETE`, and calls at the same moment do not conflict. At 1 000 claims a second the table grows
    /// by 86.4 million rows a day; an hour's retention keeps about 3.6 million.
    ///
    /// - Parameter age: How old an occurrence must be, by the database's clock, for its row to go
    ///   (unless it is its unit's latest). Zero deletes every row but the latest of each unit.
    /// - Returns: How many rows were deleted.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError``:
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration`` when `age` is negative or
    ///   beyond the nanoseconds an `Int64` holds; otherwise see the type's notes on errors.
    @discardableResult
    public func pruneRuns(olderThan age: Duration) async throws(PreciseTimerError) -> Int {
        let (seconds, attoseconds) = age.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (nanoseconds, carry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard age >= .zero, !overflow, !carry else {
            throw PreciseTimerError(
                .invalidConfiguration, value: "\(age)",
                detail: "a retention must be zero or more, and at most Int64.max nanoseconds")
        }
        let rows = try await self.run(self.statements.prune(nanoseconds), id: nil)
        do {
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        } catch {
            throw Self.failure(error, id: nil, table: self.table)
        }
    }

    /// The ID as a `text` value: PostgreSQL refuses the NUL character in one.
    private static func unit(_ id: TimerID) throws(PreciseTimerError) -> String {
        guard !id.rawValue.utf8.contains(0) else {
            throw PreciseTimerError(
                .invalidConfiguration, id: id, detail: "PostgreSQL's text cannot hold a unit ID with a NUL character")
        }
        return id.rawValue
    }

    /// Runs one statement and reads every row it returns (which also waits for its end), for at
    /// most ``timeout``: the query races a sleep, and the loser is cancelled.
    private func run(_ query: PostgresQuery, id: TimerID?) async throws(PreciseTimerError) -> [PostgresRow] {
        let client = self.client
        let timeout = self.timeout
        do {
            return try await withThrowingTaskGroup(of: [PostgresRow]?.self) { group in
                group.addTask { try await client.query(query).collect() }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let rows = try await group.next() ?? nil else { throw TimedOut() }
                return rows
            }
        } catch is TimedOut {
            throw PreciseTimerError(
                .timedOut, id: id, value: self.table, function: "PostgresClient.query",
                detail: "no answer within \(timeout)")
        } catch {
            throw Self.failure(error, id: id, table: self.table)
        }
    }

    private struct TimedOut: Error {}
}
