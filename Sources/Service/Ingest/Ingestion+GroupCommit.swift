import EventStore
import HTTP
import Infrastructure
import Ledger
import SystemCalls

/// One verified request to record: what `record(_:claimant:context:)` takes.
struct IngestRequest: @unchecked Sendable {
    var batch: FactBatch
    var claimant: String?
    var context: RequestContext
}

/// `iap_ingest_batch_size`: how many requests each durable commit of ingest carried. Filled
/// once the metrics registry exists (it is made after the service).
final class IngestBatchSizes: Sendable {
    static let buckets: [Double] = [1, 2, 4, 8, 16, 32, 64]
    private let histogram = PlainMutex<Histogram?>(nil)

    func report(to histogram: Histogram) { self.histogram.withLock { $0 = histogram } }

    func observe(_ size: Int) {
        let histogram = self.histogram.withLock { $0 }
        histogram?.observe(Double(size))
    }
}

/// What a request sent to the group committer comes back with.
enum IngestAnswer {
    case recorded(IngestOutcome)
    case failed(ServiceError)
    /// It could not share its batch (or the batch failed): record it by itself.
    case alone
}

extension Ingestion {
    /// Records a verified request from the HTTP API: with group commit on, together with the
    /// requests that arrive while others are being recorded (one transaction, one durable
    /// commit, each answered with its own outcome after it); else, or when it cannot share, by
    /// itself.
    func ingest(_ batch: FactBatch, claimant: String?, context: RequestContext) throws(ServiceError) -> IngestOutcome {
        // An alias this process knows already shares a batch as its target.
        let claimant = claimant.map { ledger.knownAliases.target(of: $0) ?? $0 }
        let request = IngestRequest(batch: batch, claimant: claimant, context: context)
        if let groupCommit = ledger.groupCommit {
            switch groupCommit.submit(request, run: { self.recordTogether($0) }) {
            case .recorded(let outcome): return outcome
            case .failed(let error): throw error
            case .alone: break
            }
        }
        return try recordAlone(request)
    }

    private func recordAlone(_ request: IngestRequest) throws(ServiceError) -> IngestOutcome {
        let outcome = try record(request.batch, claimant: request.claimant, context: request.context)
        ledger.ingestBatchSizes.observe(1)
        return outcome
    }

    /// Records `requests` in one transaction (`BatchPlanner`), answering each. A lone request is
    /// recorded by itself here; one that cannot share the batch, and every request of a batch
    /// that failed as a whole, come back `.alone`: the caller records it by itself, with its own
    /// retries and errors.
    func recordTogether(_ requests: [IngestRequest]) -> [IngestAnswer] {
        guard requests.count > 1 else {
            do throws(ServiceError) {
                return [.recorded(try recordAlone(requests[0]))]
            } catch {
                return [.failed(error)]
            }
        }
        let now = ledger.clock()
        do {
            let (ends, changes) = try ledger.unitOfWork { connection throws(ServiceError) in
                // Planned anew on every attempt (a retry after a newer catalog starts over).
                let documents = ledger.documents
                var members: [IngestPlanner] = []
                for request in requests {
                    let member = IngestPlanner(
                        batch: request.batch, claimant: request.claimant,
                        policy: ledger.configuration.ledgerTransferPolicy,
                        now: now)
                    members.append(member)
                }
                try readIdentities(for: &members, on: connection)
                var planner = BatchPlanner(members)
                let changes = try perform(&planner, requests, documents: documents, now: now, on: connection)
                return (planner.ends, changes)
            }
            ledger.changeTally.count(changes)
            var together = 0
            let answers = ends.map { end -> IngestAnswer in
                switch end {
                case .finished(let outcome)?:
                    together += 1
                    noteUnconfiguredProducts(outcome)
                    return .recorded(outcome)
                case .rejected(let rejection)?:
                    together += 1
                    return .failed(.rejected(rejection))
                case .alone?, nil:
                    return .alone
                }
            }
            if together > 0 { ledger.ingestBatchSizes.observe(together) }
            return answers
        } catch {
            ledger.logger.warning("group commit failed; its requests are recorded one by one", ["error": "\(error)"])
            return Array(repeating: .alone, count: requests.count)
        }
    }

    /// Performs the batch planner's actions on `connection`; the changes written, on success.
    private func perform(
        _ planner: inout BatchPlanner, _ requests: [IngestRequest], documents: UserDocuments, now: Int64,
        on connection: Connection
    ) throws(ServiceError) -> [NewChange] {
        var action = planner.start(catalogVersion: documents.catalogVersion)
        var written: [NewChange] = []
        var subjects = Subjects()
        while true {
            switch action {
            case .lockAndRead(let locks, let ownersOf, let streams):
                let found = try lockAndRead(locks: locks, ownersOf: ownersOf, streams: streams, on: connection)
                // An alias among the locked users (api.md §7): `record` resolves it, one by one.
                guard found.aliases.isEmpty else { throw .internalError("a request named an alias") }
                action = planner.read(owners: found.owners, streams: found.streams, announced: found.announced)

            case .append(let members, let alsoRead):
                // Every member's events in one es.append, each with its own request's metadata.
                subjects = try ledger.repository.subjects(for: members.flatMap(\.append.events), on: connection)
                let request = try ledger.repository.appendRequest(
                    members.map { member in
                        (member.append.events, requests[member.index].context.metadata, member.append.expected)
                    },
                    idempotencyKey: members.lazy.compactMap(\.append.idempotencyKey).first, subjects: subjects)
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

            case .commit(let members):
                let done = try commit(
                    members.map(\.writes), now: now, documents: documents, known: subjects, on: connection)
                written = done.changes
                action = planner.committed(documents: done.rendered)

            case .finish:
                return written

            case .abandon(let reason):
                throw .internalError("group commit abandoned: \(reason)")
            }
        }
    }
}
