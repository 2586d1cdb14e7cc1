import EventStore
import Infrastructure
import Schema

/// How `serve` meets its database: the session every pooled connection runs with, and the
/// migrations applied before anything else.
extension ServiceApp {
    /// Of every pooled connection: act as the service role, and bound how long a statement
    /// or an abandoned transaction can hold a connection and its locks.
    public static func serviceSession(_ options: Options) -> SessionSettings {
        ServiceRole.session(options.databasePoolMode)
            .setting("statement_timeout", "\(max(0, options.statementTimeoutSeconds))s")
            .setting("idle_in_transaction_session_timeout", "\(max(0, options.idleInTransactionTimeoutSeconds))s")
    }

    /// Applies pending migrations with the admin connection (the service role cannot create
    /// schemas); a failure names the file and PostgreSQL's message.
    public static func migrate(
        conninfo: String, migrations: [Migration] = SchemaMigrations.all, poolMode: PoolMode = .session, logger: Logger
    ) throws(StartupError) {
        let connection: Connection
        do {
            connection = try Connection(conninfo, connectTimeout: 10, session: SessionSettings(poolMode: poolMode))
        } catch {
            throw StartupError(description: "cannot connect to PostgreSQL: \(error.message)")
        }
        do {
            let applied = try Migrator.migrate(connection: connection, migrations: migrations)
            for name in applied { logger.info("migration applied", ["file": name]) }
        } catch {
            throw StartupError(description: "migration failed: \(error)")
        }
        // The log migration is `iap-ledger migrate`'s (it holds the tables for a while): said
        // here at every start until it ran, since erasing people recorded before is refused.
        if let rows = try? connection.query("SELECT 1 FROM identity.log_sealing"), rows.count == 0 {
            logger.warning(
                "the log holds rows from before users were named by subject: run `iap-ledger migrate` to seal them; "
                    + "until then people recorded before cannot be erased (docs/operations.md, \"Erasure and backups\")"
            )
        }
    }
}
