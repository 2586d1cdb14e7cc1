/// Every appAccountToken an event carries, and the same event carrying them otherwise: the log
/// stores a token by its opaque token subject (docs/architecture.md, "Erasure on an append-only
/// log": a token is a person's too), so the event store's codec maps each token on the way in
/// and back on the way out. An alias's moved account keeps its tokens: it is sealed whole with
/// the target's key, and erasing the target erases the tokens it holds.
extension LedgerEvent {
    /// The event with every token `f` maps, the rest unchanged.
    public func mappingTokens(_ f: (String) -> String) -> LedgerEvent {
        switch self {
        case .transactionRecorded(var transaction):
            guard let token = transaction.appAccountToken else { return self }
            transaction.appAccountToken = f(token)
            return .transactionRecorded(transaction)
        case .renewalInfoRecorded(var renewal):
            guard let token = renewal.appAccountToken else { return self }
            renewal.appAccountToken = f(token)
            return .renewalInfoRecorded(renewal)
        case .appAccountTokenRegistered(let userId, let token, let minted, let at):
            return .appAccountTokenRegistered(userId: userId, appAccountToken: f(token), minted: minted, at: at)
        case .notificationReceived, .consumptionAnswered, .retentionAnswered, .renewalExtensionRequested,
            .chainClaimed, .chainReleased, .balanceDebited, .balanceCredited, .entitlementGranted,
            .entitlementRevoked, .promotionalGranted, .promotionalRevoked, .appleAccountShared, .consentRescinded,
            .aliasMerged, .mergedInto, .subjectErased:
            return self
        }
    }

    /// The token the event carries, if any, read in place (mapping a copy of the event, as
    /// `tokens` once did, retained every string of a Transaction: a replay paid for it on every
    /// fact it decoded, and every append on its events).
    public var token: String? {
        switch self {
        case .transactionRecorded(let transaction): transaction.appAccountToken
        case .renewalInfoRecorded(let renewal): renewal.appAccountToken
        case .appAccountTokenRegistered(_, let token, _, _): token
        case .notificationReceived, .consumptionAnswered, .retentionAnswered, .renewalExtensionRequested,
            .chainClaimed, .chainReleased, .balanceDebited, .balanceCredited, .entitlementGranted,
            .entitlementRevoked, .promotionalGranted, .promotionalRevoked, .appleAccountShared, .consentRescinded,
            .aliasMerged, .mergedInto, .subjectErased:
            nil
        }
    }

    /// The tokens the event carries (at most one).
    public var tokens: [String] { token.map { [$0] } ?? [] }
}
