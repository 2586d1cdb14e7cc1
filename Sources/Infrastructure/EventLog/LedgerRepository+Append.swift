import AppStore
import EventStore
import Ledger

/// An append of decided events ready to send, and how to read its answer back in the domain's
/// stream names (a user's events are stored under their subject).
package struct LedgerAppend: Sendable {
    package let request: AppendRequest
    /// Stored stream name → the domain's (`user:<subject>` → `user:<userId>`).
    package let domainNames: [String: String]
    /// The subjects (of users and tokens) the events were sealed for that are not written yet.
    package let unsaved: [Subject]
    package let unsavedTokens: [TokenSubject]

    package var statement: Connection.Statement? { request.statement }

    /// What to send right after `statement`, in its transaction (nil when every subject was
    /// stored already); check its answer with `saved(_:)`.
    package var saveStatement: Connection.Statement? {
        unsaved.isEmpty && unsavedTokens.isEmpty ? nil : SubjectsTable.save(unsaved, tokens: unsavedTokens).statement
    }

    /// Refuses the unit of work when a subject could not be written as minted.
    package func saved(_ rows: Rows?) throws(ServiceError) {
        guard !unsaved.isEmpty || !unsavedTokens.isEmpty else { return }
        guard let rows, rows.int64(0, "saved") == Int64(unsaved.count + unsavedTokens.count) else {
            throw .conflict("a user's subject was minted by another writer meanwhile")
        }
    }
}

extension LedgerRepository {
    /// The subjects of every user the events name: one read (no write: es.append must be the
    /// transaction's first), none when no event is a user's. A user writing for the first time
    /// gets a subject minted here, a legacy one a key; both are `unsaved`, written after the
    /// append (`LedgerAppend.saveStatement`).
    package func subjects(for events: [(event: LedgerEvent, payload: String?)], on connection: Connection)
        throws(ServiceError) -> Subjects
    {
        var users: [String] = []
        var seen: Set<String> = []
        for (event, _) in events where event.route.userId != nil {
            for id in event.userIds where seen.insert(id).inserted { users.append(id) }
        }
        var subjects = try existingSubjects(users: users, on: connection)
        for user in users {
            if let known = subjects.byUser[user], known.key != nil { continue }
            var subject = Subject.minted(for: user)
            if let legacy = subjects.byUser[user] { subject.subject = legacy.subject }
            subjects.insert(subject)
            subjects.unsaved.append(subject)
        }
        try addTokenSubjects(for: events, to: &subjects, on: connection)
        return subjects
    }

    /// The subjects of every appAccountToken the events carry (and the notifications' signed
    /// payloads): one read, and for tokens never seen, their mint locks and a second read under
    /// them before minting (two ingests of one new token on different chains do not share a
    /// stream lock).
    private func addTokenSubjects(
        for events: [(event: LedgerEvent, payload: String?)], to subjects: inout Subjects, on connection: Connection
    ) throws(ServiceError) {
        var tokens: Set<String> = []
        for (event, payload) in events {
            for token in event.tokens where !TokenSubject.isSubject(token) { tokens.insert(token.lowercased()) }
            if case .notificationReceived = event, let payload, let token = JWSClaims.appAccountToken(in: payload) {
                tokens.insert(token)
            }
        }
        guard !tokens.isEmpty else { return }
        let known = SubjectsTable.existing(tokens: Array(tokens))
        for token in SubjectsTable.tokens(
            from: try database { () throws(DatabaseError) in try connection.query(known.sql, known.params) })
        {
            subjects.insert(token)
        }
        let missing = tokens.filter { subjects.byToken[$0] == nil }.sorted()
        guard !missing.isEmpty else { return }
        let reread = SubjectsTable.existing(tokens: missing)
        let answers = try database { () throws(DatabaseError) in
            try connection.pipeline(
                [store.lockStatement(missing.map(SubjectsTable.tokenLock))!, reread.statement])
        }
        for token in SubjectsTable.tokens(from: answers[1]) { subjects.insert(token) }
        for token in missing where subjects.byToken[token] == nil {
            let minted = TokenSubject.minted(for: token)
            subjects.insert(minted)
            subjects.unsavedTokens.append(minted)
        }
    }

    /// Appends decided events in one atomic multi-stream append. `expected` pins the version
    /// each stream had when its state was loaded (under lock, so a conflict means a bug or a
    /// writer that skipped the lock). Returns the recorded events (with seq) in order.
    package func append(
        _ events: [(event: LedgerEvent, payload: String?)], metadata: [UInt8], expected: [String: Int64],
        idempotencyKey: IdempotencyKey?, on connection: Connection
    ) throws(ServiceError) -> [RecordedEvent]? {
        let request = try appendRequest(
            events, metadata: metadata, expected: expected, idempotencyKey: idempotencyKey,
            subjects: subjects(for: events, on: connection))
        guard let statement = request.statement else { return [] }
        let rows = try database { () throws(DatabaseError) in try connection.query(statement.sql, statement.params) }
        let recorded = try appended(request, rows)
        if recorded != nil, let save = request.saveStatement {
            try request.saved(
                try database { () throws(DatabaseError) in try connection.query(save.sql, save.params) })
        }
        return recorded
    }

    /// The append of `append(_:metadata:expected:idempotencyKey:on:)` as a request to pipeline.
    package func appendRequest(
        _ events: [(event: LedgerEvent, payload: String?)], metadata: [UInt8], expected: [String: Int64],
        idempotencyKey: IdempotencyKey?, subjects: Subjects
    ) throws(ServiceError) -> LedgerAppend {
        let (appends, names) = try streamAppends(events, metadata: metadata, expected: expected, subjects: subjects)
        return LedgerAppend(
            request: store.appendRequest(appends, idempotencyKey: idempotencyKey), domainNames: names,
            unsaved: subjects.unsaved, unsavedTokens: subjects.unsavedTokens)
    }

    /// Several decisions' appends in one `es.append` (a group commit), each with its metadata.
    package func appendRequest(
        _ members: [(events: [(event: LedgerEvent, payload: String?)], metadata: [UInt8], expected: [String: Int64])],
        idempotencyKey: IdempotencyKey?, subjects: Subjects
    ) throws(ServiceError) -> LedgerAppend {
        var appends: [StreamAppend] = []
        var names: [String: String] = [:]
        for member in members {
            let (memberAppends, memberNames) = try streamAppends(
                member.events, metadata: member.metadata, expected: member.expected, subjects: subjects)
            appends += memberAppends
            names.merge(memberNames) { first, _ in first }
        }
        return LedgerAppend(
            request: store.appendRequest(appends, idempotencyKey: idempotencyKey), domainNames: names,
            unsaved: subjects.unsaved, unsavedTokens: subjects.unsavedTokens)
    }

    /// Decided events as the per-stream appends of `es.append`, in first-appearance order, each
    /// stored as `SubjectCodec` stores it; with the stored names' domain names.
    private func streamAppends(
        _ events: [(event: LedgerEvent, payload: String?)], metadata: [UInt8], expected: [String: Int64],
        subjects: Subjects
    ) throws(ServiceError) -> ([StreamAppend], [String: String]) {
        var order: [String] = []
        var byStream: [String: [NewEvent]] = [:]
        var names: [String: String] = [:]
        for (event, payload) in events {
            let stored = try SubjectCodec.stored(event, subjects: subjects)
            if byStream[stored.stream] == nil {
                order.append(stored.stream)
                names[stored.stream] = event.stream
            }
            byStream[stored.stream, default: []].append(
                NewEvent(
                    type: event.typeName, schemaVersion: stored.schemaVersion, data: stored.data, metadata: metadata,
                    payload: try payload.map { payload throws(ServiceError) in
                        try SubjectCodec.storedPayload(
                            payload, of: event, stream: stored.stream, subjects: subjects)
                    }))
        }
        let appends = order.map { stream in
            StreamAppend(
                stream: stream,
                expectedVersion: expected[names[stream]!].map { $0 == 0 ? .noStream : .exactly($0) } ?? .any,
                events: byStream[stream]!)
        }
        return (appends, names)
    }

    /// What the append answered: the recorded events (streams in the domain's names), nil for a
    /// duplicate; a conflict throws.
    package func appended(_ append: LedgerAppend, _ rows: Rows) throws(ServiceError) -> [RecordedEvent]? {
        let result = try database { () throws(DatabaseError) in try append.request.result(from: rows) }
        switch result {
        case .appended(var recorded):
            for index in recorded.indices {
                recorded[index].stream = append.domainNames[recorded[index].stream] ?? recorded[index].stream
            }
            return recorded
        case .duplicate: return nil
        case .conflict(let stream, let expectedVersion, let actual):
            throw .conflict("stream \(stream) moved from version \(expectedVersion) to \(actual) under lock")
        }
    }
}
