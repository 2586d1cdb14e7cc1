/// Whether a customer may get a subscription's introductory offer, as Apple decides it (api.md
/// §8): not when they already had an introductory offer or any subscription in the product's
/// subscription group. Pure: the caller gives the chains of the user (their aliases' are theirs
/// after a merge) and of the users who bought with the same Apple Accounts.
public struct IntroductoryOfferEligibility: Sendable, Hashable {
    public enum Reason: String, Sendable, Hashable {
        /// Nothing in the group was ever bought: eligible.
        case eligible
        /// An introductory offer (Apple's `offerType` 1) in the group was had already.
        case introductoryOfferUsed = "introductory_offer_used"
        /// A subscription in the group was had already (without an introductory offer).
        case subscribedInGroup = "subscribed_in_group"
    }

    public var eligible: Bool { reason == .eligible }
    public var reason: Reason
    /// The other user whose purchase (with the same Apple Account) decided it; nil: the user's own.
    public var sameAppleAccountAs: String?

    /// Decides for `productId` of `group`: a transaction counts when its product is `productId`,
    /// when Apple recorded it under `group`, or when the catalog puts its product in `group`.
    public static func decide(
        productId: String, group: String?, catalog: Catalog, own: [ChainState], others: [(String, [ChainState])]
    ) -> IntroductoryOfferEligibility {
        func counts(_ transaction: Transaction) -> Bool {
            guard transaction.productType == .subscription else { return false }
            if transaction.productId == productId { return true }
            guard let group else { return false }
            return transaction.subscriptionGroupIdentifier == group
                || catalog.products[transaction.productId]?.group == group
        }
        func judge(_ chains: [ChainState]) -> Reason {
            var subscribed = false
            for chain in chains {
                for versions in chain.transactionVersions.values {
                    for transaction in versions where counts(transaction) {
                        if transaction.offerType == 1 { return .introductoryOfferUsed }
                        subscribed = true
                    }
                }
            }
            return subscribed ? .subscribedInGroup : .eligible
        }
        let mine = judge(own)
        if mine != .eligible { return IntroductoryOfferEligibility(reason: mine, sameAppleAccountAs: nil) }
        for (user, chains) in others.sorted(by: { $0.0 < $1.0 }) {
            let theirs = judge(chains)
            if theirs != .eligible { return IntroductoryOfferEligibility(reason: theirs, sameAppleAccountAs: user) }
        }
        return IntroductoryOfferEligibility(reason: .eligible, sameAppleAccountAs: nil)
    }
}
