import EventStore
import HTTP
import Infrastructure
import Ledger
import SystemCalls

/// One verified request to record: what `record(_:claimant:context:)` takes.
package struct IngestRequest: @unchecked Sendable {
    package var batch: FactBatch
    package var claimant: String?
    package var context: RequestContext
}

/// `iap_ingest_batch_size`: how many requests each durable commit of ingest carried. Filled
/// once the metrics registry exists (it is made after the service).
package final class IngestBatchSizes: Sendable {
    package static let buckets: [Double] = [1, 2, 4, 8, 16, 32, 64]
    private let histogram = PlainMutex<Histogram?>(nil)

    package func report(to histogram: Histogram) { self.histogram.withLock { $0 = histogram } }

    package func observe(_ size: Int) {
        let histogram = self.histogram.withLock { $0 }
        histogram?.observe(Double(size))
    }
}

/// What a request sent to the group committer comes back with.
package enum IngestAnswer {
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
    package func ingest(_ batch: FactBatch, claimant: String?, context: RequestContext) throws(ServiceError)
        -> IngestOutcome
    {
        // An alias this process knows already shares a batch as its target.
        let claimant = claimant.map { ledger.knownAliases.target(of: $0) ?? $0 }
        let request = IngestRequest(batch: batch, claimant: claimant, context: context)
        if let groupCommit = groupCommit {
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
        batchSizes.observe(1)
        return outcome
    }

    /// Records `requests` in one transaction (`BatchPlanner`), answering each. A lone request is
    /// recorded by itself here; one that cannot share the batch, and every request of a batch
    /// that failed as a whole, come back `.alone`: the caller records it by itself, with its own
    /// retries and errors.
    package func recordTogether(_ requests: [IngestRequest]) -> [IngestAnswer] {
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
                let members = requests.map { request in
                    IngestPlanner(
                        batch: request.batch, claimant: request.claimant,
                        policy: ledger.configuration.ledgerTransferPolicy, now: now)
                }
                var planner = BatchPlanner(members)
                guard
                    case .done(let changes) = try perform(
                        &planner, metadata: requests.map(\.context.metadata), identities: IdentityReads(members),
                        documents: documents, now: now, on: connection)
                else { throw .internalError("a batch of several ended as only a lone request may") }
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
                case .gaveUp(let reason)?:
                    together += 1
                    return .failed(.conflict(reason))
                case .alone?, nil:
                    return .alone
                }
            }
            if together > 0 { batchSizes.observe(together) }
            return answers
        } catch {
            ledger.logger.warning("group commit failed; its requests are recorded one by one", ["error": "\(error)"])
            return Array(repeating: .alone, count: requests.count)
        }
    }
}
