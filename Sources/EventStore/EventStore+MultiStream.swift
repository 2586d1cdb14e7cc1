/// Reads and locks spanning several streams, for units of work that fold a user together
/// with the chains they own.
extension EventStore {
    /// Takes the transaction-scoped advisory lock of each stream, in the order given (callers
    /// pass them sorted). It is the same lock `es.append` takes, and it assigns no xid, so it
    /// may precede the append that must be the transaction's first write.
    public func lockStreams(_ streams: [String], on connection: Connection) throws(DatabaseError) {
        guard let statement = lockStatement(streams) else { return }
        _ = try connection.query(statement.sql, statement.params)
    }

    /// `lockStreams` as one statement to send in a pipeline (nil for no stream). Statements
    /// after it in the same pipeline run after the locks are held, each with a fresh READ
    /// COMMITTED snapshot: they see what the locks' previous holders committed.
    public func lockStatement(_ streams: [String]) -> Connection.Statement? {
        switch streams.count {
        case 0:
            return nil
        case 1:
            return Connection.Statement("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [streams[0]])
        default:
            // One statement for all: the volatile lock calls are evaluated after the sort, so in
            // the order given.
            return Connection.Statement(
                """
                SELECT pg_advisory_xact_lock(hashtextextended(s, 0))
                FROM unnest($1::text[]) WITH ORDINALITY AS x(s, o) ORDER BY o
                """, [PostgresArray.literal(streams)])
        }
    }

    /// Every event of the given streams (optionally only those recorded up to `recordedUpTo`,
    /// ms since the epoch), ordered by stream and version. Without `payloads` every event's
    /// payload is nil (folds never need the signed source, and it is most of a row's bytes).
    public func readStreams(
        _ streams: [String], recordedUpTo: Int64? = nil, payloads: Bool = true, on connection: Connection
    ) throws(DatabaseError) -> [RecordedEvent] {
        guard let statement = readStatement(streams, recordedUpTo: recordedUpTo, payloads: payloads) else { return [] }
        return Self.events(from: try connection.query(statement.sql, statement.params))
    }

    /// `readStreams` as a statement to send in a pipeline (nil for no stream); decode its rows
    /// with `EventStore.events(from:)`.
    public func readStatement(_ streams: [String], recordedUpTo: Int64? = nil, payloads: Bool = true)
        -> Connection.Statement?
    {
        guard !streams.isEmpty else { return nil }
        let (membership, parameters) = PostgresArray.membership("stream_id", streams, firstParameter: 2)
        return Connection.Statement(
            """
            SELECT \(payloads ? Self.columns : Self.columnsWithoutPayload) FROM es.events
            WHERE \(membership)
              AND ($1::bigint IS NULL OR recorded_at < 'epoch'::timestamptz + ($1::bigint + 1) * interval '1 millisecond')
            ORDER BY stream_id, version
            """,
            [recordedUpTo.map { String($0) }] + parameters)
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

    /// Up to `limit` events of the given streams with `afterSeq` < seq < `beforeSeq`, newest first
    /// (a user's history read backwards, paged by seq, so its latest page costs one index scan).
    public func readStreams(
        _ streams: [String], afterSeq: Int64 = 0, beforeSeq: Int64, limit: Int, on connection: Connection
    )
        throws(DatabaseError) -> [RecordedEvent]
    {
        guard !streams.isEmpty else { return [] }
        let rows = try connection.query(
            """
            SELECT \(Self.columns) FROM es.events
            WHERE stream_id = ANY($1::text[]) AND seq < $2::bigint AND seq > $4::bigint
            ORDER BY seq DESC
            LIMIT $3::integer
            """,
            [PostgresArray.literal(streams), String(beforeSeq), String(limit), String(afterSeq)])
        return Self.events(from: rows)
    }
}
