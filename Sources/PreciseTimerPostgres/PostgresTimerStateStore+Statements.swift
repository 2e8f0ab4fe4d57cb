import PostgresNIO
import PreciseTimerCore

extension PostgresTimerStateStore {
    /// The store's SQL. The table's name is the only text spliced into a statement, and only once
    /// ``TableName`` has checked it; every value travels as a bind parameter.
    struct Statements: Sendable {
        let table: TableName

        /// Creates the table under a transaction-scoped advisory lock, in one `DO` block (one
        /// transaction): `CREATE TABLE IF NOT EXISTS` alone fails with a unique violation in
        /// `pg_type` when two sessions create the same table at once.
        func migrate() -> PostgresQuery {
            PostgresQuery(
                unsafeSQL: """
                    DO $precise_timer$
                    BEGIN
                        PERFORM pg_advisory_xact_lock(hashtext('PreciseTimerPostgres.migrate'));
                        CREATE TABLE IF NOT EXISTS \(self.table.quoted) (
                            unit text NOT NULL,
                            occurrence bigint NOT NULL,
                            claimed_at timestamptz NOT NULL DEFAULT now(),
                            PRIMARY KEY (unit, occurrence)
                        );
                    END
                    $precise_timer$
                    """)
        }

        /// One row, one column: the unit's latest occurrence, or NULL. Reads the primary key's
        /// index backwards.
        func lastTrigger(_ unit: String) -> PostgresQuery {
            var binds = PostgresBindings()
            binds.append(unit)
            return PostgresQuery(
                unsafeSQL: "SELECT max(occurrence) FROM \(self.table.quoted) WHERE unit = $1", binds: binds)
        }

        /// A row when this statement inserted the claim, none otherwise. `NOT EXISTS` refuses an
        /// occurrence at or before a committed one; the primary key and `ON CONFLICT DO NOTHING`
        /// refuse the same occurrence inserted concurrently (the second insert waits for the first
        /// transaction, then does nothing).
        func claim(_ unit: String, _ occurrence: Int64) -> PostgresQuery {
            var binds = PostgresBindings()
            binds.append(unit)
            binds.append(occurrence)
            return PostgresQuery(
                unsafeSQL: """
                    INSERT INTO \(self.table.quoted) (unit, occurrence)
                    SELECT $1, $2
                    WHERE NOT EXISTS (SELECT 1 FROM \(self.table.quoted) WHERE unit = $1 AND occurrence >= $2)
                    ON CONFLICT (unit, occurrence) DO NOTHING
                    RETURNING true
                    """,
                binds: binds)
        }

        /// One row: how many rows were deleted. A row goes when its occurrence is older than
        /// `age` nanoseconds by the database's clock and a later row of its unit exists.
        func prune(_ age: Int64) -> PostgresQuery {
            var binds = PostgresBindings()
            binds.append(age)
            return PostgresQuery(
                unsafeSQL: """
                    WITH deleted AS (
                        DELETE FROM \(self.table.quoted) AS run
                        WHERE run.occurrence
                            < floor(extract(epoch FROM statement_timestamp()) * 1000000)::bigint * 1000 - $1
                        AND EXISTS (
                            SELECT 1 FROM \(self.table.quoted) AS later
                            WHERE later.unit = run.unit AND later.occurrence > run.occurrence)
                        RETURNING 1
                    )
                    SELECT count(*) FROM deleted
                    """,
                binds: binds)
        }
    }

    /// A table name checked to be a plain SQL identifier (or `schema.table` of two), so that it can
    /// be written into a statement, double-quoted, and mean exactly what it says.
    struct TableName: Sendable {
        /// The name double-quoted part by part: `"schema"."table"`.
        let quoted: String

        /// PostgreSQL's identifier limit (NAMEDATALEN − 1): a longer name is silently truncated.
        static let maximumLength = 63

        init(_ name: String) throws(PreciseTimerError) {
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw Self.refused(name, "more than one '.'") }
            for part in parts {
                guard !part.isEmpty else { throw Self.refused(name, "an empty name") }
                guard part.utf8.count <= Self.maximumLength else {
                    throw Self.refused(name, "a name longer than \(Self.maximumLength) bytes")
                }
                for (index, byte) in part.utf8.enumerated() {
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "_"): continue
                    case UInt8(ascii: "0")...UInt8(ascii: "9") where index > 0: continue
                    default:
                        throw Self.refused(
                            name, "only lowercase ASCII letters, digits and '_', not starting with a digit")
                    }
                }
            }
            self.quoted = parts.map { "\"\($0)\"" }.joined(separator: ".")
        }

        private static func refused(_ name: String, _ why: String) -> PreciseTimerError {
            PreciseTimerError(.invalidConfiguration, value: name, detail: "not a table name: \(why)")
        }
    }

    /// A failed database call as the store's error: see the type's notes on errors.
    static func failure(_ error: any Error, id: TimerID?, table: String) -> PreciseTimerError {
        var detail: String
        if let error = error as? PSQLError {
            // PSQLError's description hides the server's message on purpose; these fields hold no
            // bind values.
            detail = "PSQLError.\(error.code)"
            if let state = error.serverInfo?[.sqlState] { detail += ", SQLSTATE \(state)" }
            if let message = error.serverInfo?[.message] { detail += ": \(message)" }
            if let underlying = error.underlying { detail += " (\(underlying))" }
        } else if error is CancellationError {
            detail = "cancelled"
        } else {
            detail = String(describing: error)
        }
        return PreciseTimerError(
            .systemFailure, id: id, value: table, function: "PostgresClient.query", detail: detail)
    }
}
