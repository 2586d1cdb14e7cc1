/// A verified App Store transaction, as the Service maps it from a `JWSTransactionDecodedPayload`.
///
/// Apple field names are kept verbatim; enum-like fields stay raw strings so values Apple adds
/// later survive. [JWSTransactionDecodedPayload](https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload)
public struct Transaction: Sendable, Hashable {
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var bundleId: String
    /// Raw `type`: "Auto-Renewable Subscription", "Non-Consumable", "Consumable", "Non-Renewing Subscription".
    public var type: String
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int64
    /// Raw `inAppOwnershipType`: PURCHASED or FAMILY_SHARED.
    public var inAppOwnershipType: String
    public var signedDate: Int64
    public var revocationDate: Int64?
    public var revocationReason: Int64?
    /// Raw `revocationType`: REFUND_FULL, REFUND_PRORATED, FAMILY_REVOKE.
    public var revocationType: String?
    /// Raw `revocationPercentage`: the share refunded, in milliunits (50000 = 50 %), present
    /// with a prorated refund (App Store Server API 1.19) and gone again when Apple reverses it.
    /// nil with a revocation means all of it (what every refund recorded before 1.19 meant).
    public var revocationPercentage: Int64?
    public var isUpgraded: Bool
    public var offerType: Int64?
    public var offerDiscountType: String?
    public var offerIdentifier: String?
    public var environment: String
    public var appAccountToken: String?
    public var webOrderLineItemId: String?
    public var transactionReason: String?
    /// Price in milliunits of `currency`.
    public var price: Int64?
    public var currency: String?
    public var storefront: String?
    public var subscriptionGroupIdentifier: String?
    /// Apple's `appTransactionId` (App Store Server API 1.15): the app download's id, the same
    /// for every purchase from one Apple Account. nil in transactions signed before Apple sent it.
    public var appTransactionId: String?
    /// Apple's `previousOriginalTransactionId` (Notifications 2.16): the chain this subscription
    /// was migrated from; the new chain belongs to that chain's owner (api.md §8).
    public var previousOriginalTransactionId: String?
    /// `BILLED_UPFRONT` or `MONTHLY` (API 1.21); nil before Apple sent it (billed up front).
    public var billingPlanType: String? = nil
    /// A `MONTHLY` plan's place in its 12-month commitment.
    public var commitment: Commitment? = nil

    /// A monthly subscription with a 12-month commitment (api.md §8): no grace period applies.
    public var isCommitmentPlan: Bool { billingPlanType == "MONTHLY" }

    public init(
        transactionId: String, originalTransactionId: String, productId: String, bundleId: String,
        type: String, purchaseDate: Int64, originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil,
        quantity: Int64 = 1, inAppOwnershipType: String = "PURCHASED", signedDate: Int64,
        revocationDate: Int64? = nil, revocationReason: Int64? = nil, revocationType: String? = nil,
        revocationPercentage: Int64? = nil, isUpgraded: Bool = false, offerType: Int64? = nil,
        offerDiscountType: String? = nil,
        offerIdentifier: String? = nil, environment: String = "Production", appAccountToken: String? = nil,
        webOrderLineItemId: String? = nil, transactionReason: String? = nil, price: Int64? = nil,
        currency: String? = nil, storefront: String? = nil, subscriptionGroupIdentifier: String? = nil,
        appTransactionId: String? = nil, previousOriginalTransactionId: String? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.bundleId = bundleId
        self.type = type
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerDiscountType = offerDiscountType
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.appAccountToken = appAccountToken
        self.webOrderLineItemId = webOrderLineItemId
        self.transactionReason = transactionReason
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.appTransactionId = appTransactionId
        self.previousOriginalTransactionId = previousOriginalTransactionId
    }

    /// Whether this version of a transaction supersedes `other` (same transactionId).
    ///
    /// The newest `signedDate` wins. Versions signed in the same millisecond are ordered by
    /// their content, so the winner never depends on arrival order.
    public func supersedes(_ other: Transaction) -> Bool {
        if signedDate != other.signedDate { return signedDate > other.signedDate }
        if (revocationDate ?? -1) != (other.revocationDate ?? -1) {
            return (revocationDate ?? -1) > (other.revocationDate ?? -1)
        }
        if (expiresDate ?? -1) != (other.expiresDate ?? -1) { return (expiresDate ?? -1) > (other.expiresDate ?? -1) }
        if isUpgraded != other.isUpgraded { return isUpgraded }
        if productId != other.productId { return productId > other.productId }
        return FactOrder.precedes(other, self)
    }
}
