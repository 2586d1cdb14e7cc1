import EventStore
import Foundation
import Infrastructure
import Ledger

/// What `serve` does with its config's catalog at start (docs/api.md §1.1). The rule:
/// - no products in the config (e.g. no `--config`): the recorded catalog stays in force;
///   an empty config never replaces a recorded catalog;
/// - the same catalog as the newest recorded version (by hash of the canonical JSON): nothing;
/// - the same as an *older* recorded version: nothing is recorded and the newest stays in
///   force, with a warning (an instance started from an old config must not roll the catalog
///   back for everyone);
/// - any other catalog: recorded as the next version, and the users whose documents it
///   changes are re-rendered, before the service serves.
package enum CatalogRecorder {
    package enum Decision: Equatable {
        /// The config has no products: use what is recorded.
        case useRecorded
        /// The config's catalog is the newest version.
        case unchanged
        /// The config's catalog is this older version; the newest stays.
        case older(version: Int64)
        case record
    }

    /// The pure rule, over the recorded versions (oldest first).
    package static func decide(configured: Catalog, recorded versions: [CatalogVersion]) -> Decision {
        guard !configured.products.isEmpty else { return .useRecorded }
        let hash = CatalogVersions.hash(configured)
        if hash == versions.last?.hash { return .unchanged }
        if let older = versions.last(where: { $0.hash == hash }) { return .older(version: older.version) }
        return .record
    }

    /// `decide`, for `iap-ledger catalog record`: an operator's explicit act may also bring an
    /// older version back (as a new version), which a serve never does on its own.
    package static func decide(configured: Catalog, recorded versions: [CatalogVersion], force: Bool) -> Decision {
        let decision = decide(configured: configured, recorded: versions)
        if force, case .older = decision { return .record }
        return decision
    }

    /// Applies the rule on the database at `conninfo`; answers every recorded version, newest
    /// last, and the re-render when one was recorded here.
    package static func reconcile(
        conninfo: String, poolMode: PoolMode = .session, configured: Catalog, source: String?, now: Int64,
        logger: Logger, force: Bool = false
    ) throws(ServiceError) -> [CatalogVersion] {
        try record(
            conninfo: conninfo, poolMode: poolMode, configured: configured, source: source, now: now, logger: logger,
            force: force
        )
        .versions
    }

    package static func record(
        conninfo: String, poolMode: PoolMode = .session, configured: Catalog, source: String?, now: Int64,
        logger: Logger, force: Bool
    ) throws(ServiceError) -> (versions: [CatalogVersion], decision: Decision, change: CatalogChange?) {
        let connection: Connection
        do {
            // No statement timeout: the fold below reads the whole log.
            connection = try Connection(
                conninfo, connectTimeout: 10, session: ServiceRole.sessionWithoutTimeout(poolMode))
        } catch {
            throw .database(error)
        }
        var versions = try CatalogVersions.versions(on: connection)
        var decision = decide(configured: configured, recorded: versions, force: force)
        var change: CatalogChange?
        var ahead: ProjectionVersionAhead?
        if decision == .record {
            do {
                try connection.transaction { connection in
                    do throws(ServiceError) {
                        // Every writer of proj.users waits from here to our commit (migration 0023);
                        // then decide again: another instance may have recorded it meanwhile.
                        try database { () throws(DatabaseError) in try CatalogVersions.lockForRecording(on: connection)
                        }
                        // Re-rendered by this code's rules: not into a database built by newer code
                        // (under the lock a swap cannot move the version meanwhile).
                        let built = try database { () throws(DatabaseError) in
                            try ProjectionVersions.built(on: connection)
                        }
                        ahead = ProjectionVersionAhead.all(built: built, definitions: [ProjectionVersions.users]).first
                        guard ahead == nil else { return }
                        versions = try CatalogVersions.versions(on: connection)
                        decision = decide(configured: configured, recorded: versions, force: force)
                        guard decision == .record else { return }
                        // Under the lock no document can change behind the fold: every committed event counts.
                        let planned = try CatalogChange.plan(
                            catalog: configured, now: now, horizon: false, on: connection)
                        let recorded = try CatalogVersions.record(
                            configured, source: source, head: versions.last?.version ?? 0, on: connection)
                        // What the new catalog changed for each user, in the same transaction.
                        let inserts = try NewChange.inserts(
                            planned.corrections(now: now), recordedAt: now, on: connection)
                        try database { () throws(DatabaseError) in
                            for statement in planned.upserts(now: now) {
                                _ = try connection.execute(statement.sql, statement.params)
                            }
                            for insert in inserts { try connection.execute(insert) }
                        }
                        versions.append(recorded)
                        change = planned
                    } catch {
                        throw ServiceErrorBox(error: error)
                    }
                }
            } catch {
                throw ServiceErrorBox.unbox(error)
            }
        }
        if let ahead {
            // `catalog record` says so and fails; a serve starts on the recorded catalog (and unready).
            if force { throw .projectionVersionAhead(ahead) }
            logger.warning("the config's catalog is not recorded: \(ahead)", ["projection": ahead.projection])
            decision = .useRecorded
        }
        let newest = versions.last ?? .none
        switch decision {
        case .record:
            logger.info(
                "catalog version recorded",
                [
                    "version": String(newest.version), "hash": newest.hash, "source": newest.source ?? "",
                    "changedUsers": String(change?.rows.count ?? 0),
                ])
        case .older(let version):
            logger.warning(
                "the config carries an older catalog version; serving the newest recorded one"
                    + " (to bring it back: iap-ledger catalog record --config FILE)",
                ["configVersion": String(version), "version": String(newest.version), "source": source ?? ""])
        case .useRecorded where newest.version > 0:
            logger.info("no products configured: serving the recorded catalog", ["version": String(newest.version)])
        case .useRecorded, .unchanged:
            break
        }
        return (versions, decision, change)
    }
}
