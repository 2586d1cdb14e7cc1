import EventStore

/// The database role the service acts as (migration 0001): it may only SELECT and INSERT events
/// and write the projections. Every session of the service acts as it, through the
/// `SessionSettings` given to its `Connection` or `ConnectionPool` (SET ROLE once per
/// connection, or SET LOCAL ROLE per transaction behind PgBouncer), so the role is named in one place.
package enum ServiceRole {
    package static let name = "iap_ledger_service"

    /// The service role, nothing else set.
    package static func session(_ poolMode: PoolMode) -> SessionSettings {
        SessionSettings(poolMode: poolMode, role: name)
    }

    /// For a session that folds the whole log (the catalog recorder, `catalog`, a replay): no
    /// statement timeout, since the fold reads every event.
    package static func sessionWithoutTimeout(_ poolMode: PoolMode) -> SessionSettings {
        session(poolMode).setting("statement_timeout", "0")
    }
}
