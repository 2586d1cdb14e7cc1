import EventStore
import JSON

/// The JSON of `GET /v1/admin/projections` (docs/api.md §2): each projection's code and built
/// version, its position and lag (ProjectionLag), and when it was last built.
enum AdminProjectionsDocument {
    static func json(on connection: Connection) throws(DatabaseError) -> [UInt8] {
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
        for definition in ProjectionVersions.all {
            w.beginObject()
            w.key("name"); w.string(definition.name)
            w.key("mode"); w.string(definition.inline ? "inline" : "async")
            w.key("version"); w.int(Int64(definition.version))
            w.key("builtVersion")
            if let built = stored[definition.name] { w.int(Int64(built.version)) } else { w.null() }
            let (position, lag) = try ProjectionLag.position(of: definition, stored: stored[definition.name].map { ($0.tx, $0.seq) },
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
}
