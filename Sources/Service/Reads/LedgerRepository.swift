import EventStore
import JSON
import Ledger

/// Reads and writes ledger events through the event store: decoding rows into `LedgerEvent`s,
/// folding streams into states, and appending decided events grouped by stream.
struct LedgerRepository: Sendable {
    let store: EventStore

    /// One stream folded: its events in version order, version and the last sequence number.
    struct LoadedStream {
        var events: [LedgerEvent] = []
        var version: Int64 = 0
        var lastSeq: Int64 = 0
    }

    /// What a user's document is built from: their own stream and the chains they own.
    struct UserWorld {
        var userId: String
        var account: Account = .initial
        /// The version of the user's stream (what an append to it expects).
        var accountVersion: Int64 = 0
        var chains: [String: ChainState] = [:]
        /// Highest sequence among the events folded here: the document's `version`.
        var lastSeq: Int64 = 0
    }

    /// Takes the per-stream advisory locks in sorted order (PostgreSQL lock order is the only
    /// deadlock defence we need): callers lock every stream they will read-decide-write
    /// before reading it, so deciders see the state their events will follow.
    func lock(_ streams: some Sequence<String>, on connection: Connection) throws(DatabaseError) {
        try store.lockStreams(Array(Set(streams)).sorted(), on: connection)
    }

    func load(streams: [String], recordedUpTo: Int64? = nil, on connection: Connection) throws(ServiceError)
        -> [String: LoadedStream]
    {
        guard !streams.isEmpty else { return [:] }
        let rows: [RecordedEvent]
        do {
            rows = try store.readStreams(streams, recordedUpTo: recordedUpTo, payloads: false, on: connection)
        } catch {
            throw .database(error)
        }
        return try decode(rows)
    }

    /// `load` as a statement to send in a pipeline (nil for no stream); decode its rows with
    /// `decode(_:)`. Folds never read payloads, so they are not fetched.
    func loadStatement(streams: [String]) -> Connection.Statement? {
        store.readStatement(streams, payloads: false)
    }

    /// Decodes events read in stream and version order into folded-ready streams.
    func decode(_ rows: Rows) throws(ServiceError) -> [String: LoadedStream] {
        try decode(EventStore.events(from: rows))
    }

    func decode(_ rows: [RecordedEvent]) throws(ServiceError) -> [String: LoadedStream] {
        var loaded: [String: LoadedStream] = [:]
        for row in rows {
            let event = try event(of: row)
            loaded[row.stream, default: LoadedStream()].events.append(event)
            loaded[row.stream]!.version = max(loaded[row.stream]!.version, row.version)
            loaded[row.stream]!.lastSeq = max(loaded[row.stream]!.lastSeq, row.seq)
        }
        return loaded
    }

    /// Folds a user's stream, then the chains it owns (at `recordedUpTo`, when given), with the
    /// Ledger's one fold (`LedgerWorld`): the same routing and `version` as the replay's.
    func loadUser(_ userId: String, recordedUpTo: Int64? = nil, on connection: Connection) throws(ServiceError)
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

    /// Reads `streams` (in stream and version order) and folds their events into `world`.
    private func fold(
        streams: [String], recordedUpTo: Int64?, into world: inout LedgerWorld, on connection: Connection
    ) throws(ServiceError) {
        guard !streams.isEmpty else { return }
        let rows: [RecordedEvent]
        do {
            rows = try store.readStreams(streams, recordedUpTo: recordedUpTo, payloads: false, on: connection)
        } catch {
            throw .database(error)
        }
        for row in rows { world.apply(try event(of: row), seq: row.seq) }
    }

    private func event(of row: RecordedEvent) throws(ServiceError) -> LedgerEvent {
        do {
            return try LedgerEvent.decode(type: row.type, schemaVersion: row.schemaVersion, data: row.data)
        } catch {
            throw .internalError("event \(row.seq) of \(row.stream) does not decode: \(error)")
        }
    }

    /// Appends decided events in one atomic multi-stream append. `expected` pins the version
    /// each stream had when its state was loaded (under lock, so a conflict means a bug or a
    /// writer that skipped the lock). Returns the recorded events (with seq) in order.
    func append(
        _ events: [(event: LedgerEvent, payload: String?)], metadata: [UInt8], expected: [String: Int64],
        idempotencyKey: IdempotencyKey?, on connection: Connection
    ) throws(ServiceError) -> [RecordedEvent]? {
        let request = appendRequest(events, metadata: metadata, expected: expected, idempotencyKey: idempotencyKey)
        guard let statement = request.statement else { return [] }
        let rows = try database { () throws(DatabaseError) in try connection.query(statement.sql, statement.params) }
        return try appended(request, rows)
    }

    /// The append of `append(_:metadata:expected:idempotencyKey:on:)` as a request to pipeline.
    func appendRequest(
        _ events: [(event: LedgerEvent, payload: String?)], metadata: [UInt8], expected: [String: Int64],
        idempotencyKey: IdempotencyKey?
    ) -> AppendRequest {
        store.appendRequest(streamAppends(events, metadata: metadata, expected: expected), idempotencyKey: idempotencyKey)
    }

    /// Decided events as the per-stream appends of `es.append`, in first-appearance order
    /// (a group commit puts several requests' appends, each with its own metadata, in one call).
    func streamAppends(
        _ events: [(event: LedgerEvent, payload: String?)], metadata: [UInt8], expected: [String: Int64]
    ) -> [StreamAppend] {
        var order: [String] = []
        var byStream: [String: [NewEvent]] = [:]
        for (event, payload) in events {
            let stream = event.stream
            if byStream[stream] == nil { order.append(stream) }
            byStream[stream, default: []].append(
                NewEvent(type: event.typeName, schemaVersion: event.schemaVersion, data: event.encode(),
                         metadata: metadata, payload: payload))
        }
        return order.map { stream in
            StreamAppend(
                stream: stream, expectedVersion: expected[stream].map { $0 == 0 ? .noStream : .exactly($0) } ?? .any,
                events: byStream[stream]!)
        }
    }

    /// What the append answered: the recorded events, nil for a duplicate; a conflict throws.
    func appended(_ request: AppendRequest, _ rows: Rows) throws(ServiceError) -> [RecordedEvent]? {
        let result = try database { () throws(DatabaseError) in try request.result(from: rows) }
        switch result {
        case .appended(let recorded): return recorded
        case .duplicate: return nil
        case .conflict(let stream, let expectedVersion, let actual):
            throw .conflict("stream \(stream) moved from version \(expectedVersion) to \(actual) under lock")
        }
    }
}
