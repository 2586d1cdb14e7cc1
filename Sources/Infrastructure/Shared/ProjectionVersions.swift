import EventStore

/// The projections and the version their code builds. Bump a version when the rule that
/// builds the projection changes: at the next start the service rebuilds it from the log
/// (`users`: a full replay and swap *before* the HTTP server starts, so no request is served
/// from the old rules; `analytics`: the tables are emptied and the background projector
/// refills them from the start of the log while the service runs). The rebuild itself is
/// ProjectionStartup's; where each projection stands is ProjectionLag's.
public enum ProjectionVersions {
    public struct Definition: Sendable, Hashable {
        public var name: String
        public var version: Int
        /// Written in the append transaction (true) or caught up asynchronously (false).
        public var inline: Bool
    }

    /// `proj.users` (rendered Customer documents) and `proj.chain_owners`, rebuilt together.
    /// 2: subscriptions carry `commitment` (api.md §8), null for every other plan.
    /// 3: the log names users by subject (migration 0047): recording it makes instances of older
    /// code, which would write a new user's stream under the id, stop writing.
    public static let users = Definition(name: "users", version: 3, inline: true)
    /// The `analytics` tables (transactions, renewal infos, chain owners, notifications, balance movements).
    public static let analytics = Definition(name: "analytics", version: 1, inline: false)

    public static let all = [users, analytics]

    package static func definition(named name: String) -> Definition? { all.first { $0.name == name } }

    /// Records that `definition` is built up to `position` (call it in the swap transaction).
    package static func record(_ definition: Definition, position: Checkpoint, on connection: Connection)
        throws(DatabaseError)
    {
        try connection.execute(
            """
            INSERT INTO proj.projection_versions (name, version, position_tx, position, updated_at)
            VALUES ($1, $2::integer, $3::xid8, $4::bigint, now())
            ON CONFLICT (name) DO UPDATE SET version = excluded.version, position_tx = excluded.position_tx,
                position = excluded.position, updated_at = now()
            """,
            [definition.name, String(definition.version), String(position.tx), String(position.seq)])
    }

    /// What `proj.projection_versions` holds for one projection.
    package struct Stored {
        package var version: Int
        /// Where it is built up to: `(tx, seq)` of the last event it applied.
        package var tx: String
        package var seq: Int64
        /// RFC 3339 (UTC, milliseconds).
        package var updatedAt: String
    }

    /// Every row of `proj.projection_versions` (name → row), for the admin JSON and the lag metric.
    package static func stored(on connection: Connection) throws(DatabaseError) -> [String: Stored] {
        let rows = try connection.query(
            #"SELECT name, version, position_tx::text AS tx, position, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at FROM proj.projection_versions"#
        )
        var stored: [String: Stored] = [:]
        for row in 0..<rows.count {
            stored[rows[row, "name"]!] = Stored(
                version: Int(rows[row, "version"]!)!, tx: rows[row, "tx"]!, seq: rows.int64(row, "position")!,
                updatedAt: rows[row, "updated_at"]!)
        }
        return stored
    }

    /// The versions the database has built (name → version).
    package static func built(on connection: Connection) throws(DatabaseError) -> [String: Int] {
        let rows = try connection.query("SELECT name, version FROM proj.projection_versions")
        var built: [String: Int] = [:]
        for row in 0..<rows.count { built[rows[row, 0]!] = Int(rows[row, 1]!) }
        return built
    }
}
