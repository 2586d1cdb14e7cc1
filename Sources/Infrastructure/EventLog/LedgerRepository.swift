import AppStore
import EventStore
import JSON
import Ledger

/// Reads and writes ledger events through the event store: decoding rows into `LedgerEvent`s,
/// folding streams into states, and appending decided events grouped by stream.
package struct LedgerRepository: Sendable {
    package let store: EventStore

    package init(store: EventStore) {
        self.store = store
    }

    /// One stream folded: its events in version order, version and the last sequence number.
    package struct LoadedStream {
        package var events: [LedgerEvent] = []
        /// Each event's global sequence number, in step with `events`.
        package var seqs: [Int64] = []
        package var version: Int64 = 0
        package var lastSeq: Int64 = 0
    }

    /// What a user's document is built from: their own stream and the chains they own.
    package struct UserWorld {
        package var userId: String
        package var account: Account = .initial
        /// The version of the user's stream (what an append to it expects).
        package var accountVersion: Int64 = 0
        package var chains: [String: ChainState] = [:]
        /// Highest sequence among the events folded here: the document's `version`.
        package var lastSeq: Int64 = 0

        package init(
            userId: String, account: Account = .initial, accountVersion: Int64 = 0, chains: [String: ChainState] = [:],
            lastSeq: Int64 = 0
        ) {
            self.userId = userId
            self.account = account
            self.accountVersion = accountVersion
            self.chains = chains
            self.lastSeq = lastSeq
        }
    }

    /// Takes the per-stream advisory locks in sorted order (PostgreSQL lock order is the only
    /// deadlock defence we need): callers lock every stream they will read-decide-write
    /// before reading it, so deciders see the state their events will follow.
    package func lock(_ streams: some Sequence<String>, on connection: Connection) throws(DatabaseError) {
        try store.lockStreams(Array(Set(streams)).sorted(), on: connection)
    }

    package func load(streams: [String], recordedUpTo: Int64? = nil, on connection: Connection) throws(ServiceError)
        -> [String: LoadedStream]
    {
        guard let statement = readStatement(streams: streams, recordedUpTo: recordedUpTo) else { return [:] }
        let rows = try database { () throws(DatabaseError) in try connection.query(statement.sql, statement.params) }
        return try decode(rows, on: connection)
    }

    /// `load` as a statement to send in a pipeline (nil for no stream); decode its rows with
    /// `decode(_:on:)`. Folds never read payloads, so they are not fetched.
    package func loadStatement(streams: [String]) -> Connection.Statement? {
        readStatement(streams: streams, recordedUpTo: nil)
    }

    /// Every event of the given streams, named as the domain names them (`user:<userId>`), in
    /// stream and version order. A user's stream is read under its subject (`identity.subjects`,
    /// looked up in the same statement: a user without one has no events); each row carries its
    /// subject's user and key, which `decode` needs to open the sealed parts, and the token
    /// behind a token subject the event carries. The stored names are an array the index scan
    /// takes (`= ANY(ARRAY(…))`): joined as a set, the generic plan hashed the whole log (a seq
    /// scan of es.events per read: ingest fell from ~2,600 to ~1,000 purchases/s, and kept
    /// falling as the log grew). The subject and token rows are one index probe per event
    /// (`LATERAL … OFFSET 0`, which no plan can hash): as plain joins, a generic plan made on a
    /// database not yet analyzed hashed all of `identity.subjects` and `identity.tokens` on
    /// every read until autovacuum analyzed them (FreshDatabasePlanTests).
    private func readStatement(streams: [String], recordedUpTo: Int64?) -> Connection.Statement? {
        guard !streams.isEmpty else { return nil }
        return Connection.Statement(
            """
            SELECT e.seq, e.tx, e.stream_id, e.version, e.type, e.schema_version, e.data, e.metadata,
                NULL::text AS payload, floor(extract(epoch FROM e.recorded_at) * 1000)::bigint AS recorded_at_ms,
                i.user_id AS subject_user, encode(i.key, 'hex') AS subject_key,
                t.subject AS token_subject, t.token AS token
            FROM es.events e
            LEFT JOIN LATERAL (
                SELECT i.user_id, i.key FROM identity.subjects i
                WHERE e.stream_id LIKE 'user:%' AND i.subject = substr(e.stream_id, 6) OFFSET 0) i ON true
            LEFT JOIN LATERAL (
                SELECT t.subject, t.token FROM identity.tokens t WHERE t.subject = e.data->>'appAccountToken' OFFSET 0
            ) t ON true
            WHERE e.stream_id = ANY(ARRAY(
                    SELECT CASE WHEN n LIKE 'user:%'
                        THEN (SELECT 'user:' || s.subject FROM identity.subjects s WHERE s.user_id = substr(n, 6))
                        ELSE n END
                    FROM unnest($2::text[]) AS n))
              AND ($1::bigint IS NULL
                OR e.recorded_at < 'epoch'::timestamptz + ($1::bigint + 1) * interval '1 millisecond')
            ORDER BY e.stream_id, e.version
            """, [recordedUpTo.map { String($0) }, PostgresArray.literal(streams)])
    }

    /// Decodes rows of `readStatement` into folded-ready streams, keyed by the domain's names.
    /// Events naming other users name their subjects: those are looked up (one query, only when
    /// some event names another user) and turned back into user ids; tokens come back from the
    /// statement's own join.
    package func decode(_ rows: Rows, on connection: Connection) throws(ServiceError) -> [String: LoadedStream] {
        var subjects = Subjects()
        var decoded: [(row: RecordedEvent, stream: String, event: LedgerEvent, named: Bool)] = []
        for (index, row) in EventStore.events(from: rows).enumerated() {
            if let token = rows[index, "token"], let subject = rows[index, "token_subject"] {
                subjects.insert(TokenSubject(token: token, subject: subject, key: []))
            }
            var stream = row.stream
            if let userId = rows[index, "subject_user"], stream.hasPrefix(LedgerRoute.userPrefix) {
                let key = rows[index, "subject_key"].flatMap(Hex.decode)
                subjects.insert(Subject(userId: userId, subject: String(stream.dropFirst(5)), key: key))
                stream = LedgerStream.user(userId)
            }
            guard row.schemaVersion == SubjectCodec.sealedSchemaVersion else {
                decoded.append((row, stream, try event(of: row), false))
                continue
            }
            let key = subjects.bySubject[String(row.stream.dropFirst(5))]?.key
            guard
                let event = try SubjectCodec.unsealed(
                    type: row.type, stream: row.stream, data: row.data, seq: row.seq, key: key)
            else { continue }
            decoded.append((row, stream, event, true))
        }
        let unknown = Set(decoded.lazy.filter(\.named).flatMap(\.event.userIds)).subtracting(subjects.bySubject.keys)
        subjects.merge(try existingSubjects(subjects: unknown, on: connection))
        var loaded: [String: LoadedStream] = [:]
        for (row, stream, event, named) in decoded {
            loaded[stream, default: LoadedStream()].events.append(
                subjects.restoringTokens(named ? SubjectCodec.restoringUserIds(event, subjects: subjects) : event))
            loaded[stream]!.seqs.append(row.seq)
            loaded[stream]!.version = max(loaded[stream]!.version, row.version)
            loaded[stream]!.lastSeq = max(loaded[stream]!.lastSeq, row.seq)
        }
        return loaded
    }

    /// Folds a user's stream, then the chains it owns (at `recordedUpTo`, when given), with the
    /// Ledger's one fold (`LedgerWorld`): the same routing and `version` as the replay's.
    package func loadUser(_ userId: String, recordedUpTo: Int64? = nil, on connection: Connection) throws(ServiceError)
        -> UserWorld
    {
        var world = LedgerWorld()
        try fold(streams: [LedgerStream.user(userId)], recordedUpTo: recordedUpTo, into: &world, on: connection)
        let account = world.account(of: userId)
        try fold(
            streams: account.chains.map(LedgerStream.chain), recordedUpTo: recordedUpTo, into: &world, on: connection)
        return UserWorld(
            userId: userId, account: account, accountVersion: world.accountPositions[userId]?.version ?? 0,
            chains: world.chains, lastSeq: world.version(of: userId))
    }

    /// Reads `streams` and folds their events into `world`, in stream and version order.
    private func fold(
        streams: [String], recordedUpTo: Int64?, into world: inout LedgerWorld, on connection: Connection
    ) throws(ServiceError) {
        let loaded = try load(streams: streams, recordedUpTo: recordedUpTo, on: connection)
        for stream in loaded.keys.sorted() {
            let events = loaded[stream]!
            for (event, seq) in zip(events.events, events.seqs) { world.apply(event, seq: seq) }
        }
    }

    private func event(of row: RecordedEvent) throws(ServiceError) -> LedgerEvent {
        do {
            return try LedgerEvent.decode(type: row.type, schemaVersion: row.schemaVersion, data: row.data)
        } catch {
            throw .internalError("event \(row.seq) of \(row.stream) does not decode: \(error)")
        }
    }
}
