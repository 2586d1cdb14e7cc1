import EventStore
import Ledger

extension LedgerService {
    /// What `POST /v1/users/{userId}/aliases` answered.
    struct AliasOutcome {
        /// Every alias of the user, in merge order.
        var aliases: [String]
        var customer: [UInt8]
        /// false: the pair was merged before; nothing was appended.
        var merged: Bool
    }

    /// Merges `alias` into `userId` (api.md §7): under both users' stream locks (taken together,
    /// sorted, as every writer takes its locks), decides on both accounts, appends AliasMerged
    /// (the target's stream, with the alias's account) and MergedInto (the alias's), and in the
    /// same transaction writes the alias index, moves the alias's chain and token rows to the
    /// target, renders both documents and announces the target's TRANSFERs (the tables in the
    /// order a replay's swap locks them: aliases, chain owners, documents, tokens). The ids are taken
    /// as named, never resolved: naming an alias as either side is the conflict to report.
    func mergeAlias(userId: String, alias: String, context: RequestContext) throws(ServiceError) -> AliasOutcome {
        guard alias != userId else { throw .rejected(.aliasOfItself) }
        let now = clock()
        let (outcome, changes) = try unitOfWork { connection throws(ServiceError) -> (AliasOutcome, [NewChange]) in
            let documents = self.documents
            try database { () throws(DatabaseError) in
                try repository.lock([LedgerStream.user(userId), LedgerStream.user(alias)], on: connection)
            }
            let world = try repository.loadUser(userId, on: connection)
            let aliasWorld = try repository.loadUser(alias, on: connection)
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
            let recorded = try repository.append(
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
            let emptied = try repository.loadUser(alias, on: connection)
            let (aliasDocument, aliasValidUntil) = documents.render(emptied, at: now)
            try database { () throws(DatabaseError) in
                _ = try connection.execute(
                    UserDocumentsTable.upsert(
                        userId: alias, version: emptied.lastSeq,
                        document: String(decoding: aliasDocument, as: UTF8.self), renderedAt: now,
                        validUntil: aliasValidUntil))
            }
            let after = try repository.loadUser(userId, on: connection)
            let stored = try storeAnnouncing(
                after, before: world, events: events, documents: documents, now: now, on: connection)
            try database { () throws(DatabaseError) in
                _ = try connection.execute(UserAliasesTable.moveTokens(alias: alias, to: userId))
                _ = try connection.execute(AppleAccountsTable.move(alias: alias, to: userId))
            }
            return (
                AliasOutcome(aliases: after.account.aliases, customer: stored.document, merged: true), stored.changes
            )
        }
        changeTally.count(changes)
        return outcome
    }

    /// `resolveUser(_:on:)` in a read of its own (what this process has seen first).
    func resolveUser(_ userId: String) throws(ServiceError) -> String {
        if let target = knownAliases.target(of: userId) { return target }
        let resolved = try read { connection throws(ServiceError) in try resolveUser(userId, on: connection) }
        if resolved != userId { knownAliases.remember(alias: userId, target: resolved) }
        return resolved
    }

    /// The user an id names (api.md §7): its target when it is an alias, else itself. With
    /// `asOf` (ms), as it was then: an alias merged later still names itself.
    func resolveUser(_ userId: String, asOf: Int64? = nil, on connection: Connection) throws(ServiceError) -> String {
        let rows = try database { () throws(DatabaseError) in
            try connection.query(UserAliasesTable.target(of: userId, asOf: asOf))
        }
        return rows.isEmpty ? userId : (rows[0, 0] ?? userId)
    }

    /// Locks the stream of the user `named` names and answers that user: the named id's stream
    /// first, then (when it is an alias) its target's. Holding the alias's lock, the answer
    /// cannot change (a merge takes both locks), so a write that waited on a merge acts on the
    /// target. The second lock is taken out of the sorted order: only a merge of this very pair
    /// could wait on it the other way round, and PostgreSQL breaks that deadlock (40P01), which
    /// the unit of work retries.
    func lockResolvingAlias(_ named: String, with others: [String] = [], on connection: Connection)
        throws(ServiceError) -> String
    {
        try database { () throws(DatabaseError) in
            try repository.lock([LedgerStream.user(named)] + others, on: connection)
        }
        let userId = try resolveUser(named, on: connection)
        if userId != named {
            try database { () throws(DatabaseError) in
                try repository.lock([LedgerStream.user(userId)], on: connection)
            }
        }
        return userId
    }
}
