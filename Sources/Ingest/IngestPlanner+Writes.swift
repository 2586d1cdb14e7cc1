import EventStore
import Identity
import Infrastructure
import Ledger

/// What the planner asks the shell to write: the append and the projection rows of a batch, and
/// what `es.append` answered.
extension IngestPlanner {
    /// The events of a batch, appended atomically with these expectations.
    package struct Append {
        package var events: [(event: LedgerEvent, payload: String?)]
        /// Each locked stream's version when it was read (0: no stream yet).
        package var expected: [String: Int64]
        /// A notification is recorded once: the inbox knows its UUID.
        package var idempotencyKey: IdempotencyKey?
    }

    /// What `es.append` answered.
    package enum AppendAnswer {
        case recorded([RecordedEvent])
        /// The idempotency key was seen before: nothing was written.
        case duplicate
    }

    /// The projection rows a batch changes.
    package struct ProjectionWrites {
        /// The catalog the documents are rendered under, to check still in force before they are
        /// written (nil: no document is written).
        package var catalogVersion: Int64?
        /// Chains claimed by this batch, to record in `proj.chain_owners`.
        package var chainOwners: [ChainClaim]
        /// The users whose documents to re-render, sorted by id.
        package var users: [LedgerRepository.UserWorld]
        /// What each of `users` had before the batch (same order), for the change feed.
        package var changeInputs: [ChangeInput]
        /// The events the batch appended (empty: none), which name transfers and debits.
        package var events: [LedgerEvent]
        /// Apple Accounts seen on users' chains for the first time, for `proj.apple_accounts`.
        package var appleAccounts: [AppleAccountsTable.Use] = []
    }

    /// A chain and the user who claimed it.
    package struct ChainClaim: Hashable {
        package var originalTransactionId: String
        package var userId: String
    }
}
