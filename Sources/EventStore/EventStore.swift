/// The event log API. Every call runs on the caller's `Connection`, inside the caller's
/// transaction (READ COMMITTED), so an append and the projection writes that follow it commit
/// or roll back together.
///
/// Conflict and duplicate are answers, not errors, and write nothing: the transaction stays
/// usable. The expected use is still to ROLLBACK (this releases the stream locks at once) and
/// retry the whole unit of work: re-read the stream, decide again, append again.
public struct EventStore: Sendable {
    public init() {}

    /// Appends to one or more streams atomically. Must be the first write of the transaction
    /// (else SQLSTATE `ES001`): it locks every stream before writing, which keeps each stream's
    /// `(tx, seq)` order equal to its version order (docs/eventstore.md §1.1).
    /// Appends with no events are a no-op answering `.appended([])`.
    public func append(
        _ appends: [StreamAppend], idempotencyKey: IdempotencyKey? = nil, on connection: Connection
    ) throws(DatabaseError) -> AppendResult {
        let request = appendRequest(appends, idempotencyKey: idempotencyKey)
        guard let statement = request.statement else { return .appended([]) }
        return try request.result(from: connection.query(statement.sql, statement.params))
    }

    /// The same append as a statement to send in a pipeline (`Connection.pipeline`), with the
    /// decoding of its answer: lets a unit of work send the append together with the writes
    /// that follow it, in one round trip.
    public func appendRequest(_ appends: [StreamAppend], idempotencyKey: IdempotencyKey? = nil) -> AppendRequest {
        precondition(Set(appends.map(\.stream)).count == appends.count, "one StreamAppend per stream")
        let events = appends.flatMap { append in append.events.map { (stream: append.stream, event: $0) } }
        if events.isEmpty { return AppendRequest(statement: nil, events: []) }
        let statement = Connection.Statement(
            """
            SELECT status, stream_id, expected, actual, seq, tx, version,
                floor(extract(epoch FROM recorded_at) * 1000)::bigint AS recorded_at_ms
            FROM es.append($1::text[], $2::bigint[], $3, $4, $5::text[], $6::text[], $7::smallint[],
                $8::jsonb[], $9::jsonb[], $10::text[])
            """,
            [
                PostgresArray.literal(appends.map(\.stream)),
                PostgresArray.literal(appends.map(\.expectedVersion.parameter)),
                idempotencyKey?.source,
                idempotencyKey?.externalId,
                PostgresArray.literal(events.map(\.stream)),
                PostgresArray.literal(events.map(\.event.type)),
                PostgresArray.literal(events.map { String($0.event.schemaVersion) }),
                PostgresArray.literal(events.map { String(decoding: $0.event.data, as: UTF8.self) }),
                PostgresArray.literal(events.map { String(decoding: $0.event.metadata, as: UTF8.self) }),
                PostgresArray.literal(events.map(\.event.payload)),
            ])
        return AppendRequest(statement: statement, events: events)
    }

    /// Single-stream convenience for `append(_:idempotencyKey:on:)`.
    public func append(
        to stream: String, expectedVersion: ExpectedVersion, events: [NewEvent],
        idempotencyKey: IdempotencyKey? = nil, on connection: Connection
    ) throws(DatabaseError) -> AppendResult {
        try append(
            [StreamAppend(stream: stream, expectedVersion: expectedVersion, events: events)],
            idempotencyKey: idempotencyKey, on: connection)
    }

    /// The stream's head version (0 when the stream does not exist).
    public func streamVersion(_ stream: String, on connection: Connection) throws(DatabaseError) -> Int64 {
        let rows = try connection.query("SELECT version FROM es.streams WHERE stream_id = $1", [stream])
        return rows.isEmpty ? 0 : rows.int64(0, "version")!
    }

    /// The stream's events with version > `after`, in version order; with `recordedUpTo`
    /// (ms since the epoch) only those recorded at or before it (for `asOf` folds).
    public func readStream(
        _ stream: String, after version: Int64 = 0, recordedUpTo: Int64? = nil, on connection: Connection
    ) throws(DatabaseError) -> [RecordedEvent] {
        let rows = try connection.query(
            """
            SELECT \(Self.columns) FROM es.events
            WHERE stream_id = $1 AND version > $2::bigint
              AND ($3::bigint IS NULL OR recorded_at < 'epoch'::timestamptz + ($3::bigint + 1) * interval '1 millisecond')
            ORDER BY version
            """,
            [stream, String(version), recordedUpTo.map { String($0) }])
        return Self.events(from: rows)
    }

    /// Up to `limit` events after `checkpoint` in `(tx, seq)` order, only from transactions older
    /// than every transaction still in flight (`tx < pg_snapshot_xmin(pg_current_snapshot())`):
    /// an event that commits late with a lower seq is returned later, never skipped.
    /// A long-running writer anywhere in the cluster pauses readers (nothing is lost).
    public func readAll(after checkpoint: Checkpoint, limit: Int, on connection: Connection) throws(DatabaseError)
        -> [RecordedEvent]
    {
        let rows = try connection.query(
            """
            SELECT \(Self.columns) FROM es.events
            WHERE (tx, seq) > ($1::xid8, $2::bigint) AND tx < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY tx, seq
            LIMIT $3::integer
            """,
            [String(checkpoint.tx), String(checkpoint.seq), String(limit)])
        return Self.events(from: rows)
    }

    /// The saved position of the named reader (`Checkpoint.start` if never saved).
    public func loadCheckpoint(name: String, on connection: Connection) throws(DatabaseError) -> Checkpoint {
        let rows = try connection.query("SELECT tx, seq FROM es.checkpoints WHERE name = $1", [name])
        guard !rows.isEmpty else { return .start }
        return Checkpoint(tx: UInt64(rows[0, "tx"]!)!, seq: rows.int64(0, "seq")!)
    }

    /// Saves the named reader's position; call it in the transaction that applied the events.
    public func saveCheckpoint(name: String, _ checkpoint: Checkpoint, on connection: Connection) throws(DatabaseError)
    {
        try connection.execute(
            """
            INSERT INTO es.checkpoints (name, tx, seq, updated_at) VALUES ($1, $2::xid8, $3::bigint, now())
            ON CONFLICT ON CONSTRAINT checkpoints_pkey
                DO UPDATE SET tx = excluded.tx, seq = excluded.seq, updated_at = excluded.updated_at
            """,
            [name, String(checkpoint.tx), String(checkpoint.seq)])
    }

    // MARK: - Rows to events

    static let columns = """
        seq, tx, stream_id, version, type, schema_version, data, metadata, payload,
        floor(extract(epoch FROM recorded_at) * 1000)::bigint AS recorded_at_ms
        """

    static let columnsWithoutPayload = """
        seq, tx, stream_id, version, type, schema_version, data, metadata, NULL::text AS payload,
        floor(extract(epoch FROM recorded_at) * 1000)::bigint AS recorded_at_ms
        """

    /// Decodes rows selected with `columns`.
    public static func events(from rows: Rows) -> [RecordedEvent] {
        (0..<rows.count).map { row in
            RecordedEvent(
                seq: rows.int64(row, "seq")!, tx: UInt64(rows[row, "tx"]!)!, stream: rows[row, "stream_id"]!,
                version: rows.int64(row, "version")!, type: rows[row, "type"]!,
                schemaVersion: Int(rows.int64(row, "schema_version")!), data: Array(rows[row, "data"]!.utf8),
                metadata: Array(rows[row, "metadata"]!.utf8), payload: rows[row, "payload"],
                recordedAt: rows.int64(row, "recorded_at_ms")!)
        }
    }
}

/// An append ready to send (`statement`, nil when there is nothing to append) and the decoding
/// of what `es.append` answers to it.
public struct AppendRequest: Sendable {
    public let statement: Connection.Statement?
    let events: [(stream: String, event: NewEvent)]

    private struct StreamVersion: Hashable {
        var stream: String
        var version: Int64
    }

    /// The answer of `es.append` to `statement`, as `EventStore.append` gives it.
    public func result(from rows: Rows) throws(DatabaseError) -> AppendResult {
        if statement == nil { return .appended([]) }
        guard rows.count > 0 else { throw DatabaseError(sqlState: "XX000", message: "es.append answered nothing") }
        switch rows[0, "status"] {
        case "duplicate":
            return .duplicate
        case "conflict":
            return .conflict(
                stream: rows[0, "stream_id"] ?? "", expected: rows.int64(0, "expected") ?? 0,
                actual: rows.int64(0, "actual") ?? 0)
        default:
            var stored: [StreamVersion: (seq: Int64, tx: UInt64, recordedAt: Int64)] = [:]
            var nextVersion: [String: Int64] = [:]  // per stream: the version of its next event
            for row in 0..<rows.count {
                let key = StreamVersion(stream: rows[row, "stream_id"]!, version: rows.int64(row, "version")!)
                stored[key] = (rows.int64(row, "seq")!, UInt64(rows[row, "tx"]!)!, rows.int64(row, "recorded_at_ms")!)
                nextVersion[key.stream] = min(nextVersion[key.stream] ?? .max, key.version)
            }
            var recorded: [RecordedEvent] = []
            recorded.reserveCapacity(events.count)
            for (stream, event) in events {
                guard let version = nextVersion[stream] else { continue }
                nextVersion[stream] = version + 1
                guard let row = stored[StreamVersion(stream: stream, version: version)] else { continue }
                recorded.append(
                    RecordedEvent(
                        seq: row.seq, tx: row.tx, stream: stream, version: version, type: event.type,
                        schemaVersion: event.schemaVersion, data: event.data, metadata: event.metadata,
                        payload: event.payload, recordedAt: row.recordedAt))
            }
            return .appended(recorded)
        }
    }
}
