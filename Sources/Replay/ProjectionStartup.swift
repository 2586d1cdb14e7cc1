import EventStore
import Foundation
import Infrastructure

/// The start-up rebuild: before the HTTP server starts, every projection whose built version is
/// older than the code's (ProjectionVersions) is rebuilt, so no request is served from old rules.
/// One built by newer code is left alone (rolling upgrades: ProjectionVersionWatch).
package enum ProjectionStartup {
    private static let users = ProjectionVersions.users
    private static let analytics = ProjectionVersions.analytics

    /// At start, before serving: rebuilds every projection whose built version is older than
    /// the code's (or not built). Several instances starting at once: one replays, the others wait for it.
    package static func prepare(
        conninfo: String, engine: ReplayEngine, logger: Logger
    ) throws(ServiceError) {
        for attempt in 0..<600 {
            let built: [String: Int]
            let connection: Connection
            do {
                connection = try Connection(
                    conninfo, connectTimeout: 10, session: ServiceRole.session(engine.poolMode))
                built = try ProjectionVersions.built(on: connection)
            } catch {
                throw .database(error)
            }
            // Built by newer code (an instance of the next release rebuilt it): never rebuilt back
            // from here. The instance starts unready and serves nothing the version touches
            // (ProjectionVersionWatch, whose first look logs the one line saying why) until it is
            // upgraded or the versions agree again.
            let ahead = ProjectionVersionAhead.all(built: built)
            let isAhead = { (name: String) in ahead.contains { $0.projection == name } }
            if built[analytics.name] != analytics.version && !isAhead(analytics.name) {
                // A first start has nothing to rebuild: the projector fills the tables from the start.
                let previous = built[analytics.name]
                do {
                    if previous != nil { try AnalyticsProjector.requestRebuild(on: connection) }
                    try ProjectionVersions.record(analytics, position: .start, on: connection)
                } catch {
                    throw .database(error)
                }
                if let previous {
                    logger.info(
                        "analytics projection: rebuild requested (side by side, in the background)",
                        ["from": String(previous), "to": String(analytics.version)])
                }
            }
            guard built[users.name] != users.version && !isAhead(users.name) else { return }
            let empty: Bool
            do {
                // The catalog's versions are no ledger events: a log of only those has nothing to fold.
                empty =
                    try connection.query("SELECT NOT EXISTS (SELECT 1 FROM es.events WHERE stream_id <> 'catalog')")
                    .bool(0, "?column?") ?? false
            } catch {
                throw .database(error)
            }
            if empty {
                do { try ProjectionVersions.record(users, position: .start, on: connection) } catch {
                    throw .database(error)
                }
                return
            }
            logger.info(
                "projection version changed: rebuilding before serving",
                [
                    "projection": users.name, "from": built[users.name].map(String.init) ?? "none",
                    "to": String(users.version),
                ])
            do {
                let report = try engine.run(ReplayOptions(projections: [users.name]))
                logger.info(
                    "projection rebuilt",
                    [
                        "projection": users.name, "events": String(report.events),
                        "changedUsers": String(report.changedUsers.count), "durationMs": String(report.durationMs),
                    ])
                return
            } catch {
                guard case .busy = error, attempt < 599 else { throw error }
                Thread.sleep(forTimeInterval: 1)  // another instance is rebuilding: wait and look again
            }
        }
    }
}
