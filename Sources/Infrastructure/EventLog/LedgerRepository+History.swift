import EventStore
import Ledger

extension LedgerRepository {
    /// A page of the given streams' events in seq order (`afterSeq` < seq, and < `beforeSeq`
    /// newest first when given), as the domain names and encodes them: a user's sealed events
    /// opened, their subjects turned back into user ids and token subjects into tokens, an
    /// erased person's events left out.
    /// What `GET /v1/users/{id}/events` shows.
    package func history(
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
        // Sealed user events, and events carrying a token subject: decoded, to be shown in ids.
        var opened: [(row: RecordedEvent, event: LedgerEvent, sealed: Bool)] = []
        var erased: Set<Int64> = []
        for row in rows {
            if row.schemaVersion == SubjectCodec.sealedSchemaVersion {
                let subject = subjects.bySubject[String(row.stream.dropFirst(LedgerRoute.userPrefix.count))]
                if let event = try SubjectCodec.unsealed(
                    type: row.type, stream: row.stream, data: row.data, seq: row.seq, key: subject?.key)
                {
                    opened.append((row, event, true))
                } else {
                    erased.insert(row.seq)
                }
            } else if LedgerEvent.typeNames.contains(row.type),
                String(decoding: row.data, as: UTF8.self).contains("\"t_"),
                let event = try? LedgerEvent.decode(type: row.type, schemaVersion: row.schemaVersion, data: row.data),
                event.tokens.contains(where: TokenSubject.isSubject)
            {
                opened.append((row, event, false))
            }
        }
        let unknown = Set(opened.filter(\.sealed).flatMap(\.event.userIds)).subtracting(subjects.bySubject.keys)
        subjects.merge(try existingSubjects(subjects: unknown, on: connection))
        let tokenSubjects = Set(opened.flatMap(\.event.tokens).filter(TokenSubject.isSubject))
        if !tokenSubjects.isEmpty {
            let query = SubjectsTable.existing(tokenSubjects: Array(tokenSubjects))
            for token in SubjectsTable.tokens(
                from: try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) })
            {
                subjects.insert(token)
            }
        }
        var restored: [Int64: RecordedEvent] = [:]
        for (row, event, sealed) in opened {
            var domain = row
            let named = subjects.restoringTokens(
                sealed ? SubjectCodec.restoringUserIds(event, subjects: subjects) : event)
            domain.stream = named.stream
            domain.schemaVersion = named.schemaVersion
            domain.data = named.encode()
            restored[row.seq] = domain
        }
        return rows.compactMap { row in erased.contains(row.seq) ? nil : restored[row.seq] ?? row }
    }

    /// The rows of these subject ids that still exist (an event naming another user names their
    /// subject); none read when there are none.
    package func existingSubjects(subjects ids: Set<String>, on connection: Connection) throws(ServiceError) -> Subjects
    {
        guard !ids.isEmpty else { return Subjects() }
        let query = SubjectsTable.existing(subjects: Array(ids))
        return SubjectsTable.subjects(
            from: try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) })
    }

    /// The subjects of `users` that have one (no minting: a read).
    package func existingSubjects(users: [String], on connection: Connection) throws(ServiceError) -> Subjects {
        guard !users.isEmpty else { return Subjects() }
        let query = SubjectsTable.existing(users: users)
        return SubjectsTable.subjects(
            from: try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) })
    }
}
