import EventStore

/// The database role the service acts as (migration 0001): it may only SELECT and INSERT events
/// and write the projections. Every session of the service acts as it, through the
/// `SessionSettings` given to its `Connection` or `ConnectionPool` (SET ROLE once per
/// connection, or SET LOCAL ROLE per transaction behind PgBouncer), so the role is named in one place.
///
/// Its sessions also turn off PostgreSQL's JIT, and the request paths' sessions its parallel
/// workers. The service's statements are prepared, and a plan's cost is guessed before autovacuum
/// has analyzed a table: on a log never analyzed, the read of a batch's streams was estimated at
/// 110,000 (5,800 rows), above `jit_above_cost`, so every execution compiled 30 functions and
/// started two parallel workers for the 10 rows it read: 50–65 ms a read instead of 0.3, and
/// ingest fell to 350 purchases/s (webhooks benchmark, third run, `auto_explain`). A few-row
/// statement never gains from either.
package enum ServiceRole {
    package static let name = "iap_ledger_service"

    /// The service role, for the request paths and background jobs: no JIT, no parallel workers.
    package static func session(_ poolMode: PoolMode) -> SessionSettings {
        base(poolMode).setting("max_parallel_workers_per_gather", "0")
    }

    /// For a session that folds the whole log (the catalog recorder, `catalog`, a replay): no
    /// statement timeout, since the fold reads every event, and parallel workers as the server
    /// allows (a whole-log read may use them).
    package static func sessionWithoutTimeout(_ poolMode: PoolMode) -> SessionSettings {
        base(poolMode).setting("statement_timeout", "0")
    }

    private static func base(_ poolMode: PoolMode) -> SessionSettings {
        SessionSettings(poolMode: poolMode, role: name).setting("jit", "off")
    }
}
