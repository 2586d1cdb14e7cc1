import EventStore
import Ledger

extension LedgerService {
    /// Records verified facts: decide per chain, claim chains (for `claimant`, or through an
    /// `appAccountToken` for unclaimed chains), append everything atomically, and re-render the
    /// documents of every user whose view changed — all in one transaction.
    ///
    /// `IngestPlanner` decides what to do; this shell only performs its actions. Three round
    /// trips for a purchase, each a pipeline: (BEGIN,) lock the chains and the claimant, read the
    /// chains' owners, read every locked stream; append (and read the other chains of the users
    /// to re-render); write the projections and COMMIT.
    func record(_ batch: FactBatch, claimant: String?, context: RequestContext) throws(ServiceError) -> IngestOutcome {
        var planner = IngestPlanner(
            batch: batch, claimant: claimant, policy: configuration.ledgerTransferPolicy, now: clock())
        while true {
            let end = try unitOfWork { connection throws(ServiceError) in
                // One catalog version per attempt (its writes check it is still in force).
                try perform(&planner, documents: self.documents, metadata: context.metadata, on: connection)
            }
            switch end {
            case .recorded(let outcome):
                return outcome
            case .restart:
                continue  // that transaction ended with nothing written, its locks released
            case .gaveUp(let reason):
                throw .conflict(reason)
            }
        }
    }

    /// How one attempt (one transaction) ended.
    private enum IngestAttemptEnd {
        case recorded(IngestOutcome)
        /// Start again with a wider lock set (the planner holds it).
        case restart
        case gaveUp(String)
    }

    /// Runs one attempt: performs the planner's actions on `connection` until it is done.
    private func perform(
        _ planner: inout IngestPlanner, documents: UserDocuments, metadata: [UInt8], on connection: Connection
    ) throws(ServiceError) -> IngestAttemptEnd {
        var action = planner.start(catalogVersion: documents.catalogVersion)
        var rendered: [String: [UInt8]] = [:]
        while true {
            switch action {
            case .lockAndRead(let locks, let ownersOf, let streams):
                var pipeline = PipelineBatch()
                pipeline.add(repository.store.lockStatement(locks))
                let ownersSlot = pipeline.add(chainOwnersStatement(ownersOf))
                let streamsSlot = pipeline.add(repository.loadStatement(streams: streams))
                let results = try database { () throws(DatabaseError) in try pipeline.run(on: connection) }
                let owners = results[ownersSlot].map(chainOwners(from:)) ?? [:]
                action = planner.read(owners: owners, streams: try decodeStreams(results[streamsSlot]))

            case .restart:
                return .restart

            case .append(let append, let alsoRead):
                let request = repository.appendRequest(
                    append.events, metadata: metadata, expected: append.expected,
                    idempotencyKey: append.idempotencyKey)
                // The read of the other chains goes along with the append (reads only).
                var pipeline = PipelineBatch()
                let appendSlot = pipeline.add(request.statement)
                let otherSlot = pipeline.add(repository.loadStatement(streams: alsoRead))
                let results = try database { () throws(DatabaseError) in try pipeline.run(on: connection) }
                guard let answer = results[appendSlot] else {
                    preconditionFailure("the planner appends only decided events")
                }
                let recorded = try repository.appended(request, answer)
                action = planner.appended(
                    recorded.map { .recorded($0) } ?? .duplicate, otherChains: try decodeStreams(results[otherSlot]))

            case .read(let streams):
                action = planner.otherChainsRead(try repository.load(streams: streams, on: connection))

            case .commit(let writes):
                // The projection writes and COMMIT in one round trip.
                var pipeline = PipelineBatch()
                let (upsert, documentsByUser) = documents.upsert(writes.users, now: planner.now)
                rendered = documentsByUser
                // The catalog check first: it may wait for a recorder, and must not hold row locks then.
                if let version = writes.catalogVersion {
                    precondition(version == documents.catalogVersion, "documents rendered under another catalog")
                    pipeline.add(documents.catalogCheck)
                }
                if !writes.chainOwners.isEmpty {
                    pipeline.add(chainOwnersUpsert(writes.chainOwners.map { ($0.originalTransactionId, $0.userId) }))
                }
                pipeline.add(upsert)
                _ = try database { () throws(DatabaseError) in try pipeline.commit(on: connection) }
                action = planner.committed(documents: rendered)

            case .finishDuplicate(var outcome, let user):
                if let user {
                    outcome.customer = try documents.store(
                        repository.loadUser(user, on: connection), now: planner.now, on: connection)
                }
                return .recorded(outcome)

            case .finish(let outcome):
                return .recorded(outcome)

            case .reject(let rejection):
                throw .rejected(rejection)

            case .giveUp(let reason):
                return .gaveUp(reason)
            }
        }
    }

    private func decodeStreams(_ rows: Rows?) throws(ServiceError) -> [String: LedgerRepository.LoadedStream] {
        guard let rows else { return [:] }
        return try repository.decode(rows)
    }
}
