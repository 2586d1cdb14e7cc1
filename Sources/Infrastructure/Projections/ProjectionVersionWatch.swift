import EventStore
import Foundation
import HTTP
import Synchronization

/// Rolling upgrades: this process watches the projection versions the database records, so an
/// instance left on older code stops using its old rules within `interval` of a newer instance's
/// rebuild, and resumes by itself when the versions agree again (an operator replayed the
/// database back with this code). While a projection is ahead every write (`unitOfWork`), every
/// user document read and `/readyz` answer 503 `projection_version_ahead`, and the gauge
/// `iap_projection_version_ahead{projection}` is 1.
///
/// The poll is one query of a two-row table every `interval` on a pooled connection; requests
/// only read the in-memory state. The gap between a rebuild's swap and the next poll is closed
/// in the writes' own transactions (`requireStatement`, migration 0033).
package final class ProjectionVersionWatch: Sendable {
    private let ahead = Mutex<[ProjectionVersionAhead]>([])
    private let logger: Logger

    package init(logger: Logger = Logger()) {
        self.logger = logger
    }

    /// The projections ahead of this code now (empty: this instance may serve).
    package var projectionsAhead: [ProjectionVersionAhead] { ahead.withLock { $0 } }

    /// Throws `projectionVersionAhead` while any projection is ahead of this code.
    package func requireCurrent() throws(ServiceError) {
        if let first = ahead.withLock({ $0.first }) { throw .projectionVersionAhead(first) }
    }

    /// Takes in the versions `built` (name → version): logs once when a projection goes ahead
    /// of this code and once when it stops being ahead.
    package func update(built: [String: Int]) {
        let now = ProjectionVersionAhead.all(built: built)
        let before = ahead.withLock { ahead in
            let before = ahead
            ahead = now
            return before
        }
        for projection in now where !before.contains(where: { $0.projection == projection.projection }) {
            logger.error(
                "projection version ahead: refusing writes and user documents, not ready",
                [
                    "projection": projection.projection, "databaseVersion": String(projection.database),
                    "codeVersion": String(projection.code), "reason": projection.description,
                ])
        }
        for projection in before where !now.contains(where: { $0.projection == projection.projection }) {
            logger.info(
                "projection version no longer ahead: serving again",
                [
                    "projection": projection.projection, "databaseVersion": String(built[projection.projection] ?? 0),
                    "codeVersion": String(projection.code),
                ])
        }
    }

    /// Reads the recorded versions (one query) and takes them in.
    package func refresh(on connection: Connection) throws(DatabaseError) {
        update(built: try ProjectionVersions.built(on: connection))
    }

    /// `refresh` on a pooled connection; a failure leaves the state as it was (the next poll,
    /// or the write's own check, tells).
    package func refresh(pool: ConnectionPool) {
        try? pool.withConnection { connection in try refresh(on: connection) }
    }

    /// The poll as a background job (JobRunner) of every instance, on a pooled connection per check.
    package func makePollJob(pool: ConnectionPool, interval: Double = 0.5) -> BackgroundJob {
        BackgroundJob(name: "projection-version-watch", interval: interval, connections: .pooled(pool)) {
            [self] connection, _ in try refresh(on: connection)
        }
    }

    /// `iap_projection_version_ahead{projection}`: 1 while the database's version is newer than
    /// this code's, else 0 (one sample per projection the code knows).
    package func registerGauge(on registry: MetricsRegistry) {
        registry.gauge(
            "iap_projection_version_ahead",
            help: "1 while the database holds this projection at a newer version than this instance's code.",
            labels: ["projection"]
        ) { [self] in
            let ahead = projectionsAhead
            return ProjectionVersions.all.map { definition in
                (labels: [definition.name], value: ahead.contains { $0.projection == definition.name } ? 1 : 0)
            }
        }
    }

    /// Sent before every write of `proj.users` / `proj.chain_owners`, in its transaction (the
    /// catalog check included when `catalogVersion` is given): fails with IC002 once the database's
    /// `users` version is newer than this code's (migration 0033).
    package static func requireStatement(catalogVersion: Int64?) -> Connection.Statement {
        Connection.Statement(
            "SELECT es.require_projection_version($1::integer, $2::bigint)",
            [String(ProjectionVersions.users.version), catalogVersion.map(String.init)])
    }

    /// SQLSTATE raised by `es.require_projection_version`; its DETAIL is the database's version.
    package static let aheadState = LedgerSQLState.projectionVersionAhead

}
