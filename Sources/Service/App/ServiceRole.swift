/// The database role the service acts as (migration 0001): it may only SELECT and INSERT events
/// and write the projections. Every session of the service switches to it first, with this
/// one statement, so the role is named in one place.
enum ServiceRole {
    static let name = "iap_ledger_service"
    static let setRole = "SET ROLE \(name)"
    /// For a session that folds the whole log (the catalog recorder, `catalog`): no statement
    /// timeout, since the fold reads every event.
    static let setRoleWithoutTimeout = "\(setRole); SET statement_timeout = 0"
}
