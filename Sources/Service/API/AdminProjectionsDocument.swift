import EventStore
import JSON

/// The JSON of `GET /v1/admin/projections` (docs/api.md §2): each projection's code and built
/// version, its position and lag (ProjectionLag), and when it was last built.
enum AdminProjectionsDocument {
    static func json(on connection: Connection) throws(DatabaseError) -> [UInt8] {
        let headSeq = try ProjectionLag.headSeq(on: connection)
        let stored = try ProjectionVersions.stored(on: connection)
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
            w.key("updatedAt"); w.stringOrNull(stored[definition.name]?.updatedAt)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}
