import EventStore
import Infrastructure
import Ledger

/// The Identity room's use cases (api.md §7): merging an alias, erasing a person, and the
/// support lookups. Each runs in the shell's unit of work or read.
package struct Identities: Sendable {
    package let ledger: LedgerService

    package init(ledger: LedgerService) {
        self.ledger = ledger
    }
}

extension Identities {
    /// What `POST /v1/users/{userId}/aliases` answered.
    package struct AliasOutcome {
        /// Every alias of the user, in merge order.
        package var aliases: [String]
        package var customer: [UInt8]
        /// false: the pair was merged before; nothing was appended.
        package var merged: Bool
    }

    /// Merges `alias` into `userId` (api.md §7): under both users' stream locks (taken together,
    /// sorted, as every writer takes its locks), decides on both accounts, appends AliasMerged
    /// (the target's stream, with the alias's account) and MergedInto (the alias's), and in the
    /// same transaction writes the alias index, moves the alias's chain and token rows to the
    /// target, renders both documents and announces the target's TRANSFERs (the tables in the
    /// order a replay's swap locks them: aliases, chain owners, documents, tokens). The ids are taken
    /// as named, never resolved: naming an alias as either side is the conflict to report.
    package func mergeAlias(userId: String, alias: String, context: RequestContext) throws(ServiceError) -> AliasOutcome
    {
        guard alias != userId else { throw .rejected(.aliasOfItself) }
        let now = ledger.clock()
        let (outcome, changes) = try ledger.unitOfWork {
            connection throws(ServiceError) -> (AliasOutcome, [NewChange]) in
            let documents = ledger.documents
            try database { () throws(DatabaseError) in
                try ledger.repository.lock([LedgerStream.user(userId), LedgerStream.user(alias)], on: connection)
            }
            let world = try ledger.repository.loadUser(userId, on: connection)
            let aliasWorld = try ledger.repository.loadUser(alias, on: connection)
            let events: [LedgerEvent]
            do throws(Rejection) {
                events = try Account.decide(
                    .mergeAlias(userId: userId, alias: alias, aliasAccount: aliasWorld.account, at: now), world.account)
            } catch {
                throw .rejected(error)
            }
            guard !events.isEmpty else {
                let document = documents.render(world, at: now).document
                return (AliasOutcome(aliases: world.account.aliases, customer: document, merged: false), [])
            }
            let recorded = try ledger.repository.append(
                events.map { ($0, nil) }, metadata: context.metadata,
                expected: [
                    LedgerStream.user(userId): world.accountVersion,
                    LedgerStream.user(alias): aliasWorld.accountVersion,
                ],
                idempotencyKey: nil, on: connection)
            guard let merge = recorded?.first(where: { $0.type == "AliasMerged" }) else {
                throw .internalError("alias merge append reported a duplicate without an idempotency key")
            }
            // After the append: es.append must be its transaction's first write.
            try database { () throws(DatabaseError) in
                _ = try connection.execute(
                    UserAliasesTable.insert(alias: alias, userId: userId, mergedSeq: merge.seq))
                _ = try connection.execute(UserAliasesTable.moveChains(alias: alias, to: userId))
            }
            // The alias's document as a replay renders it (empty), so no CORRECTION follows; its
            // changes are not announced (its id names the target from now on: the target's
            // TRANSFERs say what moved).
            let emptied = try ledger.repository.loadUser(alias, on: connection)
            let (aliasDocument, aliasValidUntil) = documents.render(emptied, at: now)
            try database { () throws(DatabaseError) in
                _ = try connection.execute(
                    UserDocumentsTable.upsert(
                        userId: alias, version: emptied.lastSeq,
                        document: String(decoding: aliasDocument, as: UTF8.self), renderedAt: now,
                        validUntil: aliasValidUntil))
            }
            let after = try ledger.repository.loadUser(userId, on: connection)
            let stored = try UserDocumentWriter.storeAnnouncing(
                after, before: world, events: events, documents: documents, now: now, on: connection)
            try database { () throws(DatabaseError) in
                _ = try connection.execute(UserAliasesTable.moveTokens(alias: alias, to: userId))
                _ = try connection.execute(AppleAccountsTable.move(alias: alias, to: userId))
            }
            return (
                AliasOutcome(aliases: after.account.aliases, customer: stored.document, merged: true), stored.changes
            )
        }
        ledger.changeTally.count(changes)
        return outcome
    }
}
