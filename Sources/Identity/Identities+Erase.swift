import Changes
import EventStore
import Infrastructure
import Ledger

extension Identities {
    /// `DELETE /v1/users/{userId}` (admin, api.md §7): erases a person — the user, their aliases
    /// and their tokens — by crypto-shredding (docs/architecture.md, "Erasure on an append-only
    /// log"). One transaction: a `SubjectErased` event on each of their streams, then their keys
    /// destroyed and every mutable row that names them deleted or renamed to their opaque
    /// subject (chains and money stay). Their sealed events, feed rows and payloads are noise
    /// from then on; the id reads as never seen, at every `asOf`. Again: nothing to do, the same
    /// answer. A person recorded before the log named users by subject cannot be erased until
    /// `iap-ledger migrate` ran the log migration (`LogMigration`).
    package func erase(userId named: String, context: RequestContext) throws(ServiceError) {
        let now = ledger.clock()
        try ledger.unitOfWork { connection throws(ServiceError) in
            let userId = try ledger.resolveUser(named, on: connection)
            let people = [userId] + (try column(UserAliasesTable.aliases(of: userId), on: connection))
            // Others whose documents name them (an Apple Account shared): locked too, re-rendered.
            let neighbours = try column(AppleAccountsTable.neighbours(of: people), on: connection)
            try database { () throws(DatabaseError) in
                try ledger.repository.lock((people + neighbours).map(LedgerStream.user), on: connection)
            }
            let subjects = try ledger.repository.existingSubjects(users: people, on: connection)
            let erased = people.compactMap { subjects.byUser[$0] }
            guard let target = subjects.byUser[userId] else { return }  // never seen, or erased already
            if let legacy = erased.first(where: { $0.subject == $0.userId || $0.key == nil }) {
                throw .erasureNeedsLogMigration(
                    "\(legacy.userId) was recorded before the log named users by subject (migration 0047); "
                        + "erasing them needs the log migration: run `iap-ledger migrate`; nothing changed")
            }
            // Their tokens: registered, and carried by their chains' facts.
            var chains: [String] = []
            for person in people { chains += try column(ChainOwnersTable.chains(of: person), on: connection) }
            let registered = try column(AppAccountTokensTable.tokens(of: people), on: connection)
            var tokens = Subjects()
            if !registered.isEmpty {
                for token in SubjectsTable.tokens(
                    from: try rows(SubjectsTable.tokenSubjects(of: registered), on: connection))
                {
                    tokens.insert(token)
                }
            }
            let onChains = try rows(SubjectsTable.tokensOnChains(chains.map(LedgerStream.chain)), on: connection)
            for row in 0..<onChains.count {
                guard let stored = onChains[row, 0] else { continue }
                guard TokenSubject.isSubject(stored), let token = onChains[row, 1] else {
                    if TokenSubject.isSubject(stored) { continue }  // erased already with another person
                    throw .erasureNeedsLogMigration(
                        "a purchase of \(userId) was recorded with its appAccountToken in clear (before migration "
                            + "0049); erasing it needs the log migration: run `iap-ledger migrate`; nothing changed"
                    )
                }
                tokens.insert(TokenSubject(token: token, subject: stored, key: []))
            }
            // The event first (es.append is the transaction's first write), with the keys still there.
            _ = try ledger.repository.append(
                erased.map { (LedgerEvent.subjectErased(userId: $0.userId, at: now), nil) }, metadata: context.metadata,
                expected: [:], idempotencyKey: nil, on: connection)
            let tokenList = Array(tokens.byToken.values)
            var statements: [Query] = [
                SubjectsTable.erase(users: people, tokenSubjects: tokenList.map(\.subject)),
                UserDocumentsTable.delete(users: people),
                UserAliasesTable.erase(userId: userId),
                AppAccountTokensTable.delete(users: people),
                AppleAccountsTable.delete(users: people),
                ChainOwnersTable.rename(users: people, to: target.subject),
                WebhookDeliveriesTable.delete(users: people + erased.map(\.subject)),
            ]
            statements += AnalyticsProjector.erase(
                users: erased.map(\.userId), subjects: erased.map(\.subject), tokens: tokenList.map(\.token),
                tokenSubjects: tokenList.map(\.subject))
            try database { () throws(DatabaseError) in _ = try connection.pipeline(statements.map(\.statement)) }
            // The neighbours' documents named them: rendered again, naming the opaque subject.
            for neighbour in neighbours {
                _ = try UserDocumentWriter.storeAnnouncing(
                    ledger.repository.loadUser(neighbour, on: connection), documents: ledger.documents, now: now,
                    on: connection)
            }
        }
        ledger.knownAliases.forget(named)
    }

    private func rows(_ query: Query, on connection: Connection) throws(ServiceError) -> Rows {
        try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) }
    }

    private func column(_ query: Query, on connection: Connection) throws(ServiceError) -> [String] {
        let found = try rows(query, on: connection)
        return (0..<found.count).compactMap { found[$0, 0] }
    }
}
