import EventStore
import Ledger

extension LedgerRepository {
    /// A page of the given streams' events in seq order (`afterSeq` < seq, and < `beforeSeq`
    /// newest first when given), as the domain names and encodes them: a user's sealed events
    /// opened, their subjects turned back into user ids, an erased person's events left out.
    /// What `GET /v1/users/{id}/events` shows.
    func history(
        streams: [String], afterSeq: Int64, beforeSeq: Int64?, limit: Int, on connection: Connection
    ) throws(ServiceError) -> [RecordedEvent] {
        let users = streams.compactMap { LedgerRoute(stream: $0).userId }
        var subjects = try existingSubjects(users: users, on: connection)
        let stored = streams.compactMap { stream -> String? in
            guard let userId = LedgerRoute(stream: stream).userId else { return stream }
            return subjects.byUser[userId]?.stream
        }
        let rows = try database { () throws(DatabaseError) in
            if let beforeSeq {
                return try store.readStreams(
                    stored, afterSeq: afterSeq, beforeSeq: beforeSeq, limit: limit, on: connection)
            }
            return try store.readStreams(stored, afterSeq: afterSeq, limit: limit, on: connection)
        }
        var opened: [(row: RecordedEvent, event: LedgerEvent)] = []
        for row in rows where row.schemaVersion == SubjectCodec.sealedSchemaVersion {
            let subject = subjects.bySubject[String(row.stream.dropFirst(LedgerRoute.userPrefix.count))]
            if let event = try SubjectCodec.unsealed(
                type: row.type, stream: row.stream, data: row.data, seq: row.seq, key: subject?.key)
            {
                opened.append((row, event))
            }
        }
        let unknown = Set(opened.flatMap(\.event.userIds)).subtracting(subjects.bySubject.keys)
        if !unknown.isEmpty {
            let query = SubjectsTable.existing(subjects: Array(unknown))
            subjects.merge(
                SubjectsTable.subjects(
                    from: try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) }))
        }
        var restored: [Int64: RecordedEvent] = [:]
        for (row, event) in opened {
            var domain = row
            let named = SubjectCodec.restoringUserIds(event, subjects: subjects)
            domain.stream = named.stream
            domain.schemaVersion = named.schemaVersion
            domain.data = named.encode()
            restored[row.seq] = domain
        }
        return rows.compactMap { row in
            row.schemaVersion == SubjectCodec.sealedSchemaVersion ? restored[row.seq] : row
        }
    }

    /// The subjects of `users` that have one (no minting: a read).
    func existingSubjects(users: [String], on connection: Connection) throws(ServiceError) -> Subjects {
        guard !users.isEmpty else { return Subjects() }
        let query = SubjectsTable.existing(users: users)
        return SubjectsTable.subjects(
            from: try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) })
    }
}
