/// Reads and locks spanning several streams, for units of work that fold a user together
/// with the chains they own.
extension EventStore {
    /// Takes the transaction-scoped advisory lock of each stream, in the order given (callers
    /// pass them sorted). It is the same lock `es.append` takes, and it assigns no xid, so it
    /// may precede the append that must be the transaction's first write.
    public func lockStreams(_ streams: [String], on connection: Connection) throws(DatabaseError) {
        for stream in streams {
            _ = try connection.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [stream])
        }
    }

    /// Every event of the given streams (optionally only those recorded up to `recordedUpTo`,
    /// ms since the epoch), ordered by stream and version.
    public func readStreams(_ streams: [String], recordedUpTo: Int64? = nil, on connection: Connection)
        throws(DatabaseError) -> [RecordedEvent]
    {
        guard !streams.isEmpty else { return [] }
        let rows = try connection.query(
            """
            SELECT \(Self.columns) FROM es.events
            WHERE stream_id = ANY($1::text[])
              AND ($2::bigint IS NULL OR recorded_at < 'epoch'::timestamptz + ($2::bigint + 1) * interval '1 millisecond')
            ORDER BY stream_id, version
            """,
            [PostgresArray.literal(streams), recordedUpTo.map { String($0) }])
        return Self.events(from: rows)
    }

    /// Up to `limit` events of the given streams with seq > `afterSeq`, in seq order (a user's
    /// history, paged by seq).
    public func readStreams(_ streams: [String], afterSeq: Int64, limit: Int, on connection: Connection)
        throws(DatabaseError) -> [RecordedEvent]
    {
        guard !streams.isEmpty else { return [] }
        let rows = try connection.query(
            """
            SELECT \(Self.columns) FROM es.events
            WHERE stream_id = ANY($1::text[]) AND seq > $2::bigint
            ORDER BY seq
            LIMIT $3::integer
            """,
            [PostgresArray.literal(streams), String(afterSeq), String(limit)])
        return Self.events(from: rows)
    }
}
