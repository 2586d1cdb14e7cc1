import Infrastructure
import Ledger

/// Verified facts ready to record, each with the signed source it came from.
struct FactBatch {
    var transactions: [(fact: Transaction, payload: String?)] = []
    var renewals: [(fact: RenewalInfo, payload: String?)] = []
    var notification: (fact: NotificationFact, payload: String)?
}

/// What recording a batch did.
struct IngestOutcome {
    /// Each transaction of the batch and whether it was new (false: duplicate).
    var transactions: [(fact: Transaction, recorded: Bool)] = []
    /// For a notification: false when it had been received before.
    var notificationRecorded = false
    /// The claimant's document after the write (purchases only).
    var customer: [UInt8]?
    /// Chains this write moved to the claimant: originalTransactionId → the previous owner.
    var transferredFrom: [String: String] = [:]
    /// The user the purchases were recorded for: the one named, or the user it is an alias of.
    var claimant: String?
}
