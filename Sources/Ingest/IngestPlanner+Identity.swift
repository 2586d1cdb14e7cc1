import Infrastructure
import Ledger

/// What an ingest plan needs to know of identities (api.md §7, §8), which the shell reads for it
/// (`IdentityReads`): the planner itself does no I/O.
extension IngestPlanner {
    /// The batch's appAccountTokens, lowercased, whose users the shell reads into
    /// `registeredTokens` (none: nothing to read).
    package var tokensToLookUp: [String] {
        guard claimant == nil else { return [] }  // the posting user claims every chain
        return Array(
            Set(batch.transactions.compactMap { $0.fact.appAccountToken?.lowercased() }.filter { !$0.isEmpty })
        )
        .sorted()
    }

    /// The batch's appTransactionIds (api.md §7's `sameAppleAccountAs`), whose users the shell
    /// reads into `appleAccountUsers`.
    package var appTransactionIdsToLookUp: [String] {
        Array(Set(batch.transactions.compactMap { $0.fact.appTransactionId }.filter { !$0.isEmpty })).sorted()
    }

    /// The Apple Account a RESCIND_CONSENT notification of the batch is about (api.md §8).
    package var rescindedAppleAccount: String? {
        guard let fact = batch.notification?.fact, fact.rescindsConsent else { return nil }
        return fact.appTransactionId
    }

    /// `rescindedUsers`, an alias replaced by its target (nothing is appended to an alias's stream).
    package var rescindedTargets: Set<String> { Set(rescindedUsers.map { aliasTargets[$0] ?? $0 }) }
}
