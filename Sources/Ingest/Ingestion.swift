import EventStore
import Identity
import Infrastructure
import Ledger

/// The Ingest room's use case: verify Apple's signed facts and record them (`IngestPlanner`
/// decides, this shell performs its actions), alone or with concurrent requests in one
/// transaction (group commit). Built once by the composition root: it holds the room's own
/// state, the group committer and its tally.
package struct Ingestion: Sendable {
    package let ledger: LedgerService
    /// Gathers concurrent ingest requests into shared transactions (nil: every request is its
    /// own; `IAP_LEDGER_INGEST_COMMITTERS`).
    package let groupCommit: GroupCommitter<IngestRequest, IngestAnswer>?
    /// How many requests each durable commit of ingest carried (`iap_ingest_batch_size`).
    package let batchSizes: IngestBatchSizes
    /// What other rooms write in the transaction that records `events` (the AppleAPI room queues
    /// Apple's CONSUMPTION_REQUESTs there, so a request acknowledged to Apple is never lost):
    /// handed in by the composition root, so this room never names theirs.
    package let alongside: @Sendable (_ events: [LedgerEvent], _ now: Int64) -> [Query]

    package init(
        ledger: LedgerService, groupCommit: GroupCommitter<IngestRequest, IngestAnswer>.Limits?,
        alongside: @escaping @Sendable (_ events: [LedgerEvent], _ now: Int64) -> [Query]
    ) {
        self.ledger = ledger
        self.groupCommit = groupCommit.map { GroupCommitter(limits: $0) }
        self.batchSizes = IngestBatchSizes()
        self.alongside = alongside
    }
}

extension Ingestion {
    /// Records verified facts: decide per chain, claim chains (for `claimant`, or through an
    /// `appAccountToken` for unclaimed chains), append everything atomically, and re-render the
    /// documents of every user whose view changed — all in one transaction: a batch of one
    /// (`BatchPlanner`, solo) performed by the one shell, `perform`.
    ///
    /// `IngestPlanner` decides what to do; the shell only performs its actions. Three round
    /// trips for a purchase, each a pipeline: (BEGIN,) lock the chains and the claimant, read the
    /// chains' owners, read every locked stream; append (and read the other chains of the users
    /// to re-render); write the projections and COMMIT.
    ///
    /// A locked user that is an alias (api.md §7) starts the attempt over, the alias replaced by
    /// its target: the claimant named one, or a token's or chain's owner read before a merge
    /// committed. Nothing is ever appended to an alias's stream after its merge.
    package func record(_ batch: FactBatch, claimant named: String?, context: RequestContext) throws(ServiceError)
        -> IngestOutcome
    {
        var claimant = named.map { ledger.knownAliases.target(of: $0) ?? $0 }
        let policy = ledger.configuration.ledgerTransferPolicy
        let now = ledger.clock()
        var planner = BatchPlanner([IngestPlanner(batch: batch, claimant: claimant, policy: policy, now: now)])
        var aliasRestarts = 0
        var aliasTargets: [String: String] = [:]
        while true {
            let end = try ledger.unitOfWork { connection throws(ServiceError) in
                // One catalog version per attempt (its writes check it is still in force); the
                // identities go with the first locks.
                try perform(
                    &planner, metadata: [context.metadata], identities: IdentityReads(planner.planners),
                    documents: ledger.documents, now: now, on: connection)
            }
            switch end {
            case .done(let changes):
                switch planner.ends[0] {
                case .finished(var outcome)?:
                    ledger.changeTally.count(changes)
                    noteUnconfiguredProducts(outcome)
                    outcome.claimant = claimant
                    return outcome
                case .rejected(let rejection)?: throw .rejected(rejection)
                case .gaveUp(let reason)?: throw .conflict(reason)
                case .alone?, nil: throw .internalError("a lone request ended without an outcome")
                }
            case .restart:
                continue  // that transaction ended with nothing written, its locks released
            case .lockedAliases(let targets):
                aliasRestarts += 1
                guard aliasRestarts <= LedgerService.attemptLimit else {
                    throw .conflict("the users to record for kept turning out to be aliases")
                }
                for (alias, target) in targets { ledger.knownAliases.remember(alias: alias, target: target) }
                aliasTargets.merge(targets) { _, new in new }
                claimant = claimant.map { targets[$0] ?? $0 }
                var fresh = IngestPlanner(batch: batch, claimant: claimant, policy: policy, now: now)
                fresh.aliasTargets = aliasTargets
                planner = BatchPlanner([fresh])
            }
        }
    }

    /// How one transaction of ingest ended.
    package enum AttemptEnd {
        /// Every request has its end in the planner (`BatchPlanner.ends`); the changes written,
        /// to count once the transaction committed.
        case done([NewChange])
        /// Solo: start again with a wider lock set (the planner holds it).
        case restart
        /// Solo: start again afresh: these locked users are aliases (alias → target).
        case lockedAliases([String: String])
    }

    /// The one shell of ingest: performs the batch planner's actions on `connection` until the
    /// transaction's work is done — for one request or a group commit of several, each with its
    /// own `metadata`. `identities`, when given, are read with the first locks.
    package func perform(
        _ planner: inout BatchPlanner, metadata: [[UInt8]], identities: IdentityReads?, documents: UserDocuments,
        now: Int64, on connection: Connection
    ) throws(ServiceError) -> AttemptEnd {
        var identities = identities
        var action = planner.start(catalogVersion: documents.catalogVersion)
        var written: [NewChange] = []
        // The subjects the append sealed for, which the feed rows of the same write seal for too.
        var subjects = Subjects()
        while true {
            switch action {
            case .lockAndRead(let locks, let ownersOf, let streams):
                let found = try lockAndRead(
                    locks: locks, ownersOf: ownersOf, streams: streams, identities: identities, on: connection)
                if !found.aliases.isEmpty {
                    // A batch's requests name no alias this process knows: the batch fails and
                    // each request records solo, where an alias starts the attempt over.
                    guard planner.solo else { throw .internalError("a request named an alias") }
                    return .lockedAliases(found.aliases)
                }
                if let answer = found.identities { planner.give(answer) }
                identities = nil
                action = planner.read(owners: found.owners, streams: found.streams, announced: found.announced)

            case .restart:
                return .restart

            case .append(let members, let alsoRead):
                // Every member's events in one es.append, each with its own request's metadata.
                subjects = try ledger.repository.subjects(for: members.flatMap(\.append.events), on: connection)
                let request = try ledger.repository.appendRequest(
                    members.map { member in (member.append.events, metadata[member.index], member.append.expected) },
                    idempotencyKey: members.lazy.compactMap(\.append.idempotencyKey).first, subjects: subjects)
                // The read of the other chains goes along with the append (reads only).
                var pipeline = PipelineBatch()
                let appendSlot = pipeline.add(request.statement)
                let saveSlot = pipeline.add(request.saveStatement)
                let otherSlot = pipeline.add(ledger.repository.loadStatement(streams: alsoRead))
                let results = try database { () throws(DatabaseError) in try pipeline.run(on: connection) }
                // No append sent (members only reading other chains): nothing recorded, no duplicate.
                var recorded: [RecordedEvent]? = []
                if let rows = results[appendSlot] { recorded = try ledger.repository.appended(request, rows) }
                if recorded != nil { try request.saved(results[saveSlot]) }
                action = planner.appended(recorded, otherChains: try decodeStreams(results[otherSlot], on: connection))

            case .read(let streams):
                action = planner.otherChainsRead(try ledger.repository.load(streams: streams, on: connection))

            case .commit(let members):
                let done = try commit(
                    members.map(\.writes), now: now, documents: documents, known: subjects, on: connection)
                written = done.changes
                action = planner.committed(documents: done.rendered)

            case .finishDuplicate(var outcome, let user):
                if let user {
                    // Rendered anew, so what time changed since the stored one is announced first.
                    (outcome.customer, written) = try UserDocumentWriter.storeAnnouncing(
                        ledger.repository.loadUser(user, on: connection), documents: documents, now: now,
                        on: connection)
                }
                action = planner.finishedDuplicate(outcome)

            case .finish:
                return .done(written)

            case .abandon(let reason):
                throw .internalError("group commit abandoned: \(reason)")
            }
        }
    }

    /// Writes the projection rows of one or more decisions (of disjoint users), then COMMITs,
    /// in one round trip: what was rendered, by user, and the changes written to the feed.
    package func commit(
        _ writes: [IngestPlanner.ProjectionWrites], now: Int64, documents: UserDocuments, known: Subjects,
        on connection: Connection
    ) throws(ServiceError) -> (rendered: [String: [UInt8]], changes: [NewChange]) {
        var pipeline = PipelineBatch()
        // Never judged before what the feed already announced (another instance's clock may
        // run a little ahead): the documents' rendered_at only moves forward.
        let renderedAt = max(now, writes.flatMap { $0.changeInputs.compactMap(\.announcedAt) }.max() ?? now)
        let (upsert, rendered) = documents.upsert(writes.flatMap(\.users), now: renderedAt)
        let chainOwners = writes.flatMap(\.chainOwners)
        // The catalog check first: it may wait for a recorder, and must not hold row locks then.
        let versions = writes.compactMap(\.catalogVersion)
        if !versions.isEmpty {
            precondition(
                versions.allSatisfy { $0 == documents.catalogVersion }, "documents rendered under another catalog")
            pipeline.add(documents.catalogCheck)
        } else if !chainOwners.isEmpty {
            pipeline.add(documents.projectionCheck)
        }
        if !chainOwners.isEmpty {
            pipeline.add(ChainOwnersTable.upsert(chainOwners.map { ($0.originalTransactionId, $0.userId) }))
        }
        pipeline.add(upsert)
        pipeline.add(AppleAccountsTable.insert(writes.flatMap(\.appleAccounts))?.statement)
        // The changes in the same transaction: a write that rolls back emits none. Each
        // decision's own, since its events name its transfers and debits.
        let writer = ChangeWriter(catalog: documents.catalog)
        let changes = writes.flatMap { writer.changes($0, documents: rendered, now: renderedAt) }
        // Sealed by subject (ChangeSealing), with the subjects the append sealed for: read only
        // for a user the append did not name (a neighbour in sameAppleAccountAs, say).
        if !changes.isEmpty {
            let rows = try ChangeSealing.rows(
                changes, subjects: ChangeSealing.subjects(for: changes, knowing: known, on: connection))
            pipeline.add(ChangeFeedTable.insert(rows, recordedAt: renderedAt)?.statement)
        }
        // Other rooms' writes for these events (Apple's CONSUMPTION_REQUESTs queued with the
        // notification): in the same commit, never acknowledged and then forgotten.
        for query in alongside(writes.flatMap(\.events), now) { pipeline.add(query.statement) }
        _ = try database { () throws(DatabaseError) in try pipeline.commit(on: connection) }
        return (rendered, changes)
    }

    /// In one round trip: take `locks` in the order given, then read the owners of `ownersOf`,
    /// every event of `streams`, when the locked users' documents were rendered (what the feed
    /// announced of them), which locked users are aliases and, if asked, `identities`.
    package func lockAndRead(
        locks: [String], ownersOf: [String], streams: [String], identities: IdentityReads? = nil,
        on connection: Connection
    ) throws(ServiceError) -> (
        owners: [String: String], streams: [String: LedgerRepository.LoadedStream], announced: [String: Int64],
        aliases: [String: String], identities: IdentityReads.Answer?
    ) {
        var pipeline = PipelineBatch()
        pipeline.add(ledger.repository.store.lockStatement(locks))
        let lockedUsers = locks.compactMap { LedgerRoute(stream: $0).userId }
        // Read under the locks: a locked user that is an alias stays one (its merge committed).
        // Before the other projection tables: the order a replay's swap locks them in.
        let aliasesSlot = pipeline.add(lockedUsers.isEmpty ? nil : UserAliasesTable.targets(of: lockedUsers).statement)
        let ownersSlot = pipeline.add(ChainOwnersTable.owners(of: ownersOf))
        let streamsSlot = pipeline.add(ledger.repository.loadStatement(streams: streams))
        let announcedSlot = pipeline.add(
            lockedUsers.isEmpty ? nil : UserDocumentsTable.renderedAt(of: lockedUsers).statement)
        let identitySlots = identities?.add(to: &pipeline)
        let results = try database { () throws(DatabaseError) in try pipeline.run(on: connection) }
        return (
            results[ownersSlot].map(ChainOwnersTable.owners(from:)) ?? [:],
            try decodeStreams(results[streamsSlot], on: connection),
            results[announcedSlot].map(UserDocumentsTable.renderedAt(from:)) ?? [:],
            results[aliasesSlot].map(UserAliasesTable.targets(from:)) ?? [:],
            identitySlots.map { IdentityReads.answer(results, $0) }
        )
    }

    package func decodeStreams(_ rows: Rows?, on connection: Connection) throws(ServiceError)
        -> [String: LedgerRepository.LoadedStream]
    {
        guard let rows else { return [:] }
        return try ledger.repository.decode(rows, on: connection)
    }
}

extension Ingestion {
    /// After a commit: counts what `outcome` recorded of unconfigured products and warns once per
    /// product (see `UnconfiguredProductTally`). Judged by the catalog in force now, the one
    /// the documents were rendered under (or a newer one, which only names more products).
    package func noteUnconfiguredProducts(_ outcome: IngestOutcome) {
        let first = ledger.unconfiguredProducts.count(outcome.transactions, catalog: ledger.catalogs.current.catalog)
        for key in first {
            ledger.logger.warning(
                "a product missing from the catalog was purchased: recorded, granting the entitlement named by its product id; add it to the config's products",
                ["bundleId": key.bundleId, "productId": key.productId])
        }
    }
}
