import Glibc

/// Why migrating stopped. `description` names the file and carries PostgreSQL's message.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    /// The migration file that failed (nil when the failure is not about one file).
    public let file: String?
    public let message: String
    /// The underlying database error, if any.
    public let databaseError: DatabaseError?

    public init(file: String?, message: String, databaseError: DatabaseError?) {
        self.file = file
        self.message = message
        self.databaseError = databaseError
    }

    public var description: String {
        if let file { return "migration \(file) failed: \(message)" }
        return "migration failed: \(message)"
    }
}

/// Applies `NNNN_name.sql` files in order, each in its own transaction, recorded in
/// `public.schema_migrations`. Run with the admin connection (not the service role).
/// A file must not contain transaction control (BEGIN/COMMIT) nor statements that cannot run
/// in a transaction (CREATE INDEX CONCURRENTLY); an applied file is never edited.
///
/// Safe through PgBouncer in transaction pooling: nothing outlives a transaction. Each one
/// takes the transaction-level advisory lock that serialises migrating processes, then checks
/// again whether its file is applied (another process may have done it while we waited), and
/// applies and records it; the lock goes with COMMIT or ROLLBACK, on whatever server session.
public enum Migrator {
    /// Arbitrary constant: the advisory lock that serialises migrating processes.
    static let lockKey = "7345112093411"

    /// Applies the pending `migrations` (the binary's own are `SchemaMigrations.all`); answers the
    /// names of those applied. They are checked first: numbered, named `NNNN_name.sql`, in order,
    /// each number once.
    @discardableResult
    public static func migrate(connection: Connection, migrations: [Migration]) throws(MigrationError) -> [String] {
        try validate(migrations)
        let applied: Set<Int>
        do {
            applied = try connection.transaction { connection in
                // Lock first: two processes creating the table at once would collide too.
                try lock(connection)
                try connection.executeScript(
                    """
                    CREATE TABLE IF NOT EXISTS public.schema_migrations (
                        version integer NOT NULL,
                        name text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now(),
                        CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
                    )
                    """)
                let rows = try connection.query("SELECT version FROM public.schema_migrations")
                return Set((0..<rows.count).map { Int(rows.int64($0, "version")!) })
            }
        } catch let error as DatabaseError {
            throw MigrationError(file: nil, message: error.message, databaseError: error)
        } catch {
            throw MigrationError(file: nil, message: "\(error)", databaseError: nil)
        }
        var done: [String] = []
        for file in migrations where !applied.contains(file.version) {
            do {
                let ran = try connection.transaction { connection -> Bool in
                    try lock(connection)
                    let recorded = try connection.query(
                        "SELECT 1 FROM public.schema_migrations WHERE version = $1", [String(file.version)])
                    guard recorded.count == 0 else { return false }
                    try connection.executeScript(file.sql)
                    try connection.execute(
                        "INSERT INTO public.schema_migrations (version, name) VALUES ($1, $2)",
                        [String(file.version), file.name])
                    return true
                }
                if ran { done.append(file.name) }
            } catch let error as DatabaseError {
                throw MigrationError(file: file.name, message: error.message, databaseError: error)
            } catch {
                throw MigrationError(file: file.name, message: "\(error)", databaseError: nil)
            }
        }
        return done
    }

    /// Held until the end of the current transaction.
    private static func lock(_ connection: Connection) throws(DatabaseError) {
        _ = try connection.query("SELECT pg_advisory_xact_lock($1::bigint)", [lockKey])
    }

    /// Refuses a list the migrator must not guess about: a name not `NNNN_name.sql` or not
    /// matching its version, a number used twice, or numbers out of order.
    static func validate(_ migrations: [Migration]) throws(MigrationError) {
        var previous: Migration?
        for migration in migrations {
            let digits = migration.name.prefix { $0.isASCII && $0.isNumber }
            guard digits.count == 4, migration.name.dropFirst(4).first == "_", migration.name.hasSuffix(".sql"),
                Int(digits) == migration.version
            else {
                throw MigrationError(
                    file: migration.name, message: "migration files are named NNNN_name.sql", databaseError: nil)
            }
            if let previous, previous.version >= migration.version {
                let message =
                    previous.version == migration.version
                    ? "version \(migration.version) is also used by \(previous.name)"
                    : "out of order after \(previous.name)"
                throw MigrationError(file: migration.name, message: message, databaseError: nil)
            }
            previous = migration
        }
    }
}
