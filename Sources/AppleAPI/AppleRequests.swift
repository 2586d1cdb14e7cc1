import Infrastructure
import Ingest

/// The Apple Server API room's use cases: sync a user from Apple, extend a renewal date, set a
/// chain's appAccountToken, answer Apple's consumption and retention requests, reconcile.
/// Each asks Apple outside any transaction and records what Apple answered in the shell's
/// unit of work (the ingest shell's for Apple's facts).
package struct AppleRequests: Sendable {
    package let ledger: LedgerService
    /// What Apple's answers are recorded through, as any signed fact is.
    package let ingestion: Ingestion

    package init(ledger: LedgerService, ingestion: Ingestion) {
        self.ledger = ledger
        self.ingestion = ingestion
    }
}
