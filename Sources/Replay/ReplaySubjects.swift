import EventStore
import Infrastructure

/// The subjects a pass over the log decodes users' sealed events with (`identity.subjects`,
/// docs/architecture.md, "Erasure on an append-only log"): all of them, read once, then those a
/// batch names that were not there yet (users who first wrote since) looked up before the batch
/// is decoded again. A subject still unknown then is an erased person's, and stays so.
package struct ReplaySubjects {
    package private(set) var subjects = Subjects()
    private var erased: Set<String> = []
    private var erasedTokens: Set<String> = []
    /// Where the lookups run: a replay's reading connection is busy with the next fetch while a
    /// batch is decoded, so it gets a connection of its own, opened at the first lookup.
    private let lookups: SubjectLookups

    package init(connect: @escaping @Sendable () throws(ServiceError) -> Connection) {
        lookups = SubjectLookups(connect: connect)
    }

    /// Reads every subject, before the first batch is fetched (on the reading connection).
    package mutating func loadAll(on connection: Connection) throws(ServiceError) {
        let rows = try database { () throws(DatabaseError) in try connection.query(SubjectsTable.all) }
        subjects = SubjectsTable.subjects(from: rows)
        let tokens = try database { () throws(DatabaseError) in try connection.query(SubjectsTable.allTokens) }
        for token in SubjectsTable.tokens(from: tokens) { subjects.insert(token) }
    }

    /// Decodes a fetched batch (on `parts` threads) with every subject it names that exists.
    package mutating func decode(_ bytes: [UInt8], parts: Int) throws(ServiceError) -> ReplayLogReader.Batch {
        let batch = try ReplayLogReader.decodeInParallel(bytes, parts: parts, subjects: subjects)
        guard !batch.erasedMeanwhile else {
            throw .busy("a person was erased while the log was read; run it again")
        }
        let missing = batch.unknownSubjects.subtracting(erased)
        let missingTokens = batch.unknownTokenSubjects.subtracting(erasedTokens)
        guard !missing.isEmpty || !missingTokens.isEmpty else { return batch }
        var found = Subjects()
        if !missing.isEmpty {
            found = SubjectsTable.subjects(from: try lookups.run(SubjectsTable.existing(subjects: Array(missing))))
            erased.formUnion(missing.subtracting(found.bySubject.keys))
        }
        if !missingTokens.isEmpty {
            let tokens = SubjectsTable.tokens(
                from: try lookups.run(SubjectsTable.existing(tokenSubjects: Array(missingTokens))))
            for token in tokens { found.insert(token) }
            erasedTokens.formUnion(missingTokens.subtracting(tokens.map(\.subject)))
        }
        guard !found.bySubject.isEmpty || !found.byToken.isEmpty else { return batch }
        subjects.merge(found)
        return try ReplayLogReader.decodeInParallel(bytes, parts: parts, subjects: subjects)
    }
}

/// The connection `ReplaySubjects` looks subjects up on, opened when first needed.
package final class SubjectLookups {
    private let connect: @Sendable () throws(ServiceError) -> Connection
    private var connection: Connection?

    package init(connect: @escaping @Sendable () throws(ServiceError) -> Connection) {
        self.connect = connect
    }

    package func run(_ query: Query) throws(ServiceError) -> Rows {
        let connection: Connection
        if let open = self.connection {
            connection = open
        } else {
            connection = try connect()
            self.connection = connection
        }
        return try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) }
    }
}
