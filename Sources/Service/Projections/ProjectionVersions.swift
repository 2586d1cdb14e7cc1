import EventStore
import Foundation
import JSON
import Ledger

/// The projections and the version their code builds. Bump a version when the rule that
/// builds the projection changes: at the next start the service rebuilds it from the log
/// (`users`: a full replay and swap *before* the HTTP server starts, so no request is served
/// from the old rules; `analytics`: the tables are emptied and the background projector
/// refills them from the start of the log while the service runs).
public enum ProjectionVersions {
    public struct Definition: Sendable, Hashable {
        public var name: String
        public var version: Int
        /// Written in the append transaction (true) or caught up asynchronously (false).
        public var inline: Bool
    }

    /// `proj.users` (rendered Customer documents) and `proj.chain_owners`, rebuilt together.
    public static let users = Definition(name: "users", version: 1, inline: true)
    /// The `analytics` tables (transactions, renewal infos, chain owners, notifications, balance movements).
    public static let analytics = Definition(name: "analytics", version: 1, inline: false)

    public static let all = [users, analytics]

    static func definition(named name: String) -> Definition? { all.first { $0.name == name } }

    /// Records that `definition` is built up to `position` (call it in the swap transaction).
    static func record(_ definition: Definition, position: Checkpoint, on connection: Connection) throws(DatabaseError) {
        try connection.execute(
            """
            INSERT INTO proj.projection_versions (name, version, position_tx, position, updated_at)
            VALUES ($1, $2::integer, $3::xid8, $4::bigint, now())
            ON CONFLICT (name) DO UPDATE SET version = excluded.version, position_tx = excluded.position_tx,
                position = excluded.position, updated_at = now()
            """,
            [definition.name, String(definition.version), String(position.tx), String(position.seq)])
    }

    /// The versions the database has built (name → version).
    static func built(on connection: Connection) throws(DatabaseError) -> [String: Int] {
        let rows = try connection.query("SELECT name, version FROM proj.projection_versions")
        var built: [String: Int] = [:]
        for row in 0..<rows.count { built[rows[row, 0]!] = Int(rows[row, 1]!) }
        return built
    }

    /// At start, before serving: rebuilds every projection whose built version differs from
    /// the code's. Several instances starting at once: one replays, the others wait for it.
    static func prepare(
        conninfo: String, engine: ReplayEngine, logger: Logger
    ) throws(ServiceError) {
        for attempt in 0..<600 {
            let built: [String: Int]
            let connection: Connection
            do {
                connection = try Connection(conninfo, connectTimeout: 10)
                try connection.executeScript("SET ROLE iap_ledger_service")
                built = try Self.built(on: connection)
            } catch {
                throw .database(error)
            }
            if built[analytics.name] != analytics.version {
                do {
                    try AnalyticsProjector.reset(on: connection)
                    try record(analytics, position: .start, on: connection)
                } catch {
                    throw .database(error)
                }
                if let previous = built[analytics.name] {  // silent on a first start: nothing to rebuild yet
                    logger.info("analytics projection reset for rebuild",
                                ["from": String(previous), "to": String(analytics.version)])
                }
            }
            guard built[users.name] != users.version else { return }
            let empty: Bool
            do {
                // The catalog's versions are no ledger events: a log of only those has nothing to fold.
                empty = try connection.query("SELECT NOT EXISTS (SELECT 1 FROM es.events WHERE stream_id <> 'catalog')")
                    .bool(0, "?column?") ?? false
            } catch {
                throw .database(error)
            }
            if empty {
                do { try record(users, position: .start, on: connection) } catch { throw .database(error) }
                return
            }
            logger.info("projection version changed: rebuilding before serving",
                        ["projection": users.name, "from": built[users.name].map(String.init) ?? "none",
                         "to": String(users.version)])
            do {
                let report = try engine.run(ReplayOptions(projections: [users.name]))
                logger.info("projection rebuilt", [
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

    /// `GET /v1/admin/projections`: each projection's code and built version, position, lag.
    static func status(on connection: Connection) throws(DatabaseError) -> [UInt8] {
        let head = try connection.query(
            """
            SELECT coalesce(max(seq), 0) AS seq, count(*) AS events FROM es.events
            """)
        let headSeq = head.int64(0, "seq") ?? 0
        let rows = try connection.query(
            #"SELECT name, version, position_tx::text AS tx, position, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at FROM proj.projection_versions"#)
        var stored: [String: (version: Int, tx: String, seq: Int64, updated: String)] = [:]
        for row in 0..<rows.count {
            stored[rows[row, "name"]!] = (
                Int(rows[row, "version"]!)!, rows[row, "tx"]!, rows.int64(row, "position")!, rows[row, "updated_at"]!
            )
        }
        var w = JSONWriter(capacity: 512)
        w.beginObject()
        w.key("head"); w.int(headSeq)
        w.key("projections")
        w.beginArray()
        for definition in all {
            w.beginObject()
            w.key("name"); w.string(definition.name)
            w.key("mode"); w.string(definition.inline ? "inline" : "async")
            w.key("version"); w.int(Int64(definition.version))
            w.key("builtVersion")
            if let built = stored[definition.name] { w.int(Int64(built.version)) } else { w.null() }
            let (position, lag) = try Self.position(of: definition, stored: stored[definition.name].map { ($0.tx, $0.seq) },
                                                     headSeq: headSeq, on: connection)
            w.key("position"); w.int(position)
            w.key("lag"); w.int(lag)
            w.key("updatedAt"); w.stringOrNull(stored[definition.name]?.updated)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// Where a projection stands and how many events it is behind. Inline projections are
    /// written with the events, so they stand at the head once built at the current version.
    static func position(
        of definition: Definition, stored: (tx: String, seq: Int64)?, headSeq: Int64, on connection: Connection
    ) throws(DatabaseError) -> (position: Int64, lag: Int64) {
        if definition.inline {
            return stored == nil ? (0, try lag(after: .start, on: connection)) : (headSeq, 0)
        }
        let checkpoint = try EventStore().loadCheckpoint(name: AnalyticsProjector.checkpointName, on: connection)
        return (checkpoint.seq, try lag(after: checkpoint, on: connection))
    }

    /// Events after `checkpoint` in `(tx, seq)` order.
    static func lag(after checkpoint: Checkpoint, on connection: Connection) throws(DatabaseError) -> Int64 {
        let rows = try connection.query(
            "SELECT count(*) AS n FROM es.events WHERE (tx, seq) > ($1::xid8, $2::bigint)",
            [String(checkpoint.tx), String(checkpoint.seq)])
        return rows.int64(0, "n") ?? 0
    }
}

extension ProjectionVersions {
    /// `iap_projection_lag_events` samples, taken at scrape time (empty when the store is down).
    static func lagSamples(pool: ConnectionPool) -> [(labels: [String], value: Double)] {
        (try? pool.withConnection { connection in
            let head = try connection.query("SELECT coalesce(max(seq), 0) AS seq FROM es.events").int64(0, "seq") ?? 0
            let rows = try connection.query("SELECT name, position_tx::text AS tx, position FROM proj.projection_versions")
            var stored: [String: (String, Int64)] = [:]
            for row in 0..<rows.count { stored[rows[row, 0]!] = (rows[row, 1]!, rows.int64(row, "position")!) }
            return try all.map { definition in
                let lag = try position(of: definition, stored: stored[definition.name], headSeq: head, on: connection).lag
                return (labels: [definition.name], value: Double(lag))
            }
        }) ?? []
    }
}
