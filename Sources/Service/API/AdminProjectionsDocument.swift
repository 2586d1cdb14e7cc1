import EventStore
import Infrastructure
import JSON

/// The JSON of `GET /v1/admin/projections` (docs/api.md §2): each projection's code and built
/// version, its position and lag (ProjectionLag), and when it was last built; then which
/// instance runs each background job (`ops.leases`), and which instance answered.
enum AdminProjectionsDocument {
    static func json(on connection: Connection, leases: LeaseHolder) throws(DatabaseError) -> [UInt8] {
        let headSeq = try ProjectionLag.headSeq(on: connection)
        let stored = try ProjectionVersions.stored(on: connection)
        var w = JSONWriter(capacity: 512)
        w.beginObject()
        w.key("head")
        w.int(headSeq)
        w.key("projections")
        w.beginArray()
        for definition in ProjectionVersions.all {
            w.beginObject()
            w.key("name")
            w.string(definition.name)
            w.key("mode")
            w.string(definition.inline ? "inline" : "async")
            w.key("version")
            w.int(Int64(definition.version))
            w.key("builtVersion")
            if let built = stored[definition.name] { w.int(Int64(built.version)) } else { w.null() }
            let (position, lag) = try ProjectionLag.position(
                of: definition, stored: stored[definition.name].map { ($0.tx, $0.seq) },
                headSeq: headSeq, on: connection)
            w.key("position")
            w.int(position)
            w.key("lag")
            w.int(lag)
            w.key("updatedAt")
            w.stringOrNull(stored[definition.name]?.updatedAt)
            w.endObject()
        }
        w.endArray()
        w.key("instance")
        w.string(leases.name)
        w.key("leases")
        w.beginArray()
        for lease in try LeaseHolder.all(on: connection) {
            w.beginObject()
            w.key("name")
            w.string(lease.name)
            w.key("holder")
            w.string(lease.holder)
            w.key("token")
            w.int(lease.token)
            w.key("since")
            w.string(RFC3339.format(lease.acquiredAt))
            w.key("renewedAt")
            w.string(RFC3339.format(lease.renewedAt))
            w.key("expiresAt")
            w.string(RFC3339.format(lease.expiresAt))
            // An expired row is its holder's last word (it died): nobody runs the job until the next asks.
            w.key("expired")
            w.bool(!lease.live)
            w.key("heldHere")
            w.bool(lease.live && lease.claim == leases.claim)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}
