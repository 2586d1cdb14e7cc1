import AppleAPI
import Changes
import Identity
import Infrastructure
import Ingest
import Reads

/// The rooms' use cases, each built once by the composition root from the shell
/// (`LedgerService`) and the room's own state — the group committer for ingest, the document
/// cache for reads — and handed to the routes and jobs that call them, each only what it uses.
/// Where one room's write needs another's in its transaction, the wiring is here (ingest
/// queueing Apple's consumption requests), so neither room names the other. The CLI's commands
/// build their use cases here too (no cache, no group commit), so they record exactly as serve.
package struct Rooms: Sendable {
    package let ledger: LedgerService
    package let ingestion: Ingestion
    package let reads: CustomerReads
    package let feed: ChangeFeedReads
    package let identities: Identities
    package let apple: AppleRequests

    package init(
        ledger: LedgerService, documentCheck: UserDocumentCacheCheck? = nil,
        groupCommit: GroupCommitter<IngestRequest, IngestAnswer>.Limits? = nil
    ) {
        self.ledger = ledger
        ingestion = Ingestion(ledger: ledger, groupCommit: groupCommit) { events, now in
            ConsumptionRequestsTable.enqueue(events, now: now).map { [$0] } ?? []
        }
        reads = CustomerReads(ledger: ledger, documentCheck: documentCheck)
        feed = ChangeFeedReads(ledger: ledger)
        identities = Identities(ledger: ledger)
        apple = AppleRequests(ledger: ledger, ingestion: ingestion)
    }
}
