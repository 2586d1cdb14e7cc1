import Infrastructure
import Ledger

/// Verified facts ready to record, each with the signed source it came from.
package struct FactBatch {
    package var transactions: [(fact: Transaction, payload: String?)] = []
    package var renewals: [(fact: RenewalInfo, payload: String?)] = []
    package var notification: (fact: NotificationFact, payload: String)?

    package init(
        transactions: [(fact: Transaction, payload: String?)] = [],
        renewals: [(fact: RenewalInfo, payload: String?)] = [],
        notification: (fact: NotificationFact, payload: String)? = nil
    ) {
        self.transactions = transactions
        self.renewals = renewals
        self.notification = notification
    }
}

/// What recording a batch did.
package struct IngestOutcome {
    /// Each transaction of the batch and whether it was new (false: duplicate).
    package var transactions: [(fact: Transaction, recorded: Bool)] = []
    /// For a notification: false when it had been received before.
    package var notificationRecorded = false
    /// The claimant's document after the write (purchases only).
    package var customer: [UInt8]?
    /// Chains this write moved to the claimant: originalTransactionId → the previous owner.
    package var transferredFrom: [String: String] = [:]
    /// The user the purchases were recorded for: the one named, or the user it is an alias of.
    package var claimant: String?
}
