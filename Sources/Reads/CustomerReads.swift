import EventStore
import HTTP
import Infrastructure
import JSON
import Ledger

/// The Reads room's use cases: a user's document (now, cached, or as of an instant), their
/// history, a chain, and whether an introductory offer is open to them. Every read runs in
/// the shell's `read` or `historyRead`; none writes.
package struct CustomerReads: Sendable {
    package let ledger: LedgerService
    /// The in-process cache of user documents and what keeps it exact; nil: every read queries.
    package let documentCheck: UserDocumentCacheCheck?

    package init(ledger: LedgerService, documentCheck: UserDocumentCacheCheck?) {
        self.ledger = ledger
        self.documentCheck = documentCheck
    }
}

extension CustomerReads {
    /// `GET /v1/users/{id}`: from the in-process cache when it holds a document true now (after
    /// a check of PostgreSQL that started after this read did); otherwise the stored document
    /// while it is still true (one indexed row), otherwise folded from the log and judged now.
    package func customer(userId named: String) throws(ServiceError) -> [UInt8] {
        let userId = ledger.knownAliases.target(of: named) ?? named
        // Rendered (or cached) under this code's rules: not while the database holds newer ones.
        try ledger.projectionVersions.requireCurrent()
        let now = ledger.clock()
        guard let feed = documentCheck, feed.awaitCheck() else {
            documentCheck?.cache.bypasses.add(1, ordering: .relaxed)
            return try fetchCustomer(userId: userId, now: now).judged.document
        }
        let cache = feed.cache
        if let document = cache.document(for: userId, at: now) {
            cache.hits.add(1, ordering: .relaxed)
            return document
        }
        return try missed(userId: userId, now: now, cache: cache)
    }

    /// A read the cache could not answer after a successful check: from PostgreSQL, kept for the
    /// next reads unless the document changed meanwhile (the ticket).
    private func missed(userId: String, now: Int64, cache: UserDocumentCache) throws(ServiceError) -> [UInt8] {
        cache.misses.add(1, ordering: .relaxed)
        let ticket = cache.ticket(for: userId)
        let judged = try fetchCustomer(userId: userId, now: now)
        // An alias found just now is not kept under its own id (the target's writes would not
        // drop it): the next read asks the cache for the target.
        if judged.userId == userId { cache.insert(judged.judged, for: userId, ticket: ticket) }
        return judged.judged.document
    }

    /// `customer(userId:)` without blocking the caller (an HTTP worker): `answer` is called
    /// once, on the cache check's thread when the cache has the document, else on `offload`
    /// (which reads PostgreSQL as `customer(userId:)` does). Same guarantees: the cache answers
    /// only after a check that started after this call.
    package func customer(
        userId named: String, offload: HandlerPool, answer: @escaping @Sendable (Result<[UInt8], ServiceError>) -> Void
    ) {
        do throws(ServiceError) { try ledger.projectionVersions.requireCurrent() } catch {
            return answer(.failure(error))
        }
        let userId = ledger.knownAliases.target(of: named) ?? named
        let now = ledger.clock()
        guard let feed = documentCheck else {
            return offload.execute { answer(Result { () throws(ServiceError) in try self.customer(userId: userId) }) }
        }
        feed.whenChecked { succeeded in
            let cache = feed.cache
            if succeeded, let document = cache.document(for: userId, at: now) {
                cache.hits.add(1, ordering: .relaxed)
                return answer(.success(document))
            }
            offload.execute {
                answer(
                    Result { () throws(ServiceError) in
                        guard succeeded else {
                            cache.bypasses.add(1, ordering: .relaxed)
                            return try self.fetchCustomer(userId: userId, now: now).judged.document
                        }
                        return try self.missed(userId: userId, now: now, cache: cache)
                    })
            }
        }
    }

    /// The document of the user `named` names (an alias resolved: one indexed read), and that user.
    private func fetchCustomer(userId named: String, now: Int64) throws(ServiceError)
        -> (judged: UserDocuments.Judged, userId: String)
    {
        let documents = ledger.documents
        return try ledger.read { connection throws(ServiceError) in
            let userId = try ledger.resolveUser(named, on: connection)
            if userId != named { ledger.knownAliases.remember(alias: named, target: userId) }
            if let stored = try documents.cached(userId: userId, now: now, on: connection) { return (stored, userId) }
            let world = try ledger.repository.loadUser(userId, on: connection)
            let (document, validUntil) = documents.render(world, at: now)
            return (UserDocuments.Judged(document: document, validFrom: now, validUntil: validUntil), userId)
        }
    }

    /// `?asOf=`: the document as it would have been answered at `instant`, from the events
    /// recorded up to it, judged at that instant.
    /// An alias resolves only when it was merged by `instant`: before, it answers as it was.
    package func customer(userId named: String, asOf instant: Int64) throws(ServiceError) -> [UInt8] {
        try ledger.projectionVersions.requireCurrent()
        // Under the catalog in force at that instant, not today's (docs/api.md §1.1). The versions
        // are brought up to date first (one lookup): a history question has one answer, not one
        // per instance until the next poll. History: a replica may answer (ReadRouting).
        return try ledger.historyRead { connection throws(ServiceError) in
            try ledger.catalogs.refresh(on: connection)
            let documents = UserDocuments(catalog: ledger.catalogs.at(instant).catalog)
            let userId = try ledger.resolveUser(named, asOf: instant, on: connection)
            let world = try ledger.repository.loadUser(userId, recordedUpTo: instant, on: connection)
            return documents.render(world, at: instant).document
        }
    }

    /// `GET /v1/users/{id}/events`: the user's own stream and the chains they own, oldest first;
    /// with `before`, newest first from below that seq (and above `after`; the console's
    /// timeline), `next` then being the `before` of the following page.
    /// An alias names its target; a user's history includes its aliases' own streams.
    package func events(userId named: String, after: Int64, before: Int64? = nil, limit: Int) throws(ServiceError)
        -> [UInt8]
    {
        try ledger.historyRead { connection throws(ServiceError) in
            let userId = try ledger.resolveUser(named, on: connection)
            let owned = try ownedChains(of: userId, on: connection)
            let aliases = try database { () throws(DatabaseError) in
                try connection.query(UserAliasesTable.aliases(of: userId))
            }
            let streams =
                ([userId] + (0..<aliases.count).compactMap { aliases[$0, 0] }).map(LedgerStream.user)
                + owned.map(LedgerStream.chain)
            let rows = try ledger.repository.history(
                streams: streams, afterSeq: after, beforeSeq: before, limit: limit + 1, on: connection)
            var writer = JSONWriter(capacity: 512 + rows.count * 512)
            writer.beginObject()
            writer.key("events")
            writer.beginArray()
            for row in rows.prefix(limit) {
                writer.beginObject()
                writer.key("seq")
                writer.int(row.seq)
                writer.key("type")
                writer.string(row.type)
                writer.key("stream")
                writer.string(row.stream)
                writer.key("recordedAt")
                writer.timestamp(row.recordedAt)
                writer.key("data")
                writer.raw(APITimes.presenting(row.data))
                writer.endObject()
            }
            writer.endArray()
            writer.key("next")
            if rows.count > limit, let last = rows.prefix(limit).last { writer.int(last.seq) } else { writer.null() }
            writer.endObject()
            return writer.bytes
        }
    }

    /// `GET /v1/subscriptions/{otid}`: owner, judged state, every transaction and renewal info.
    package func subscription(originalTransactionId otid: String) throws(ServiceError) -> [UInt8] {
        let now = ledger.clock()
        return try ledger.historyRead { connection throws(ServiceError) in
            let stream = LedgerStream.chain(otid)
            // A stream without facts (only Apple's Retention Messaging request for a chain the
            // ledger never saw) is no recorded chain either.
            guard let loaded = try ledger.repository.load(streams: [stream], on: connection)[stream],
                Chain.fold(loaded.events).originalTransactionId != nil
            else {
                throw .notFound("no transaction chain \(otid) has been recorded")
            }
            let owners = try database { () throws(DatabaseError) in
                try connection.query(ChainOwnersTable.owner(of: otid))
            }
            let owner = owners.isEmpty ? nil : owners[0, 0]
            return APITimes.presenting(
                SubscriptionDetail(
                    originalTransactionId: otid, owner: owner, chain: Chain.fold(loaded.events), at: now
                ).jsonBytes())
        }
    }

    package func ownedChains(of userId: String, on connection: Connection) throws(ServiceError) -> [String] {
        do {
            let rows = try connection.query(ChainOwnersTable.chains(of: userId))
            return (0..<rows.count).compactMap { rows[$0, 0] }
        } catch {
            throw .database(error)
        }
    }
}
