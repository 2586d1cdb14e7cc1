/// A verified subscription renewal info (`JWSRenewalInfoDecodedPayload`), mapped by the Service.
///
/// [JWSRenewalInfoDecodedPayload](https://developer.apple.com/documentation/appstoreserverapi/jwsrenewalinfodecodedpayload)
public struct RenewalInfo: Sendable, Hashable {
    public var originalTransactionId: String
    public var productId: String?
    public var autoRenewProductId: String?
    /// 0 off, 1 on.
    public var autoRenewStatus: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Int64?
    /// 1 cancelled, 2 billing error, 3 no price-increase consent, 4 product not available, 5 other.
    public var expirationIntent: Int64?
    public var signedDate: Int64
    public var environment: String
    public var renewalDate: Int64?
    public var offerType: Int64?
    public var priceIncreaseStatus: Int64?
    public var recentSubscriptionStartDate: Int64?
    /// The billing plan of the next renewal (API 1.21).
    public var renewalBillingPlanType: String? = nil
    /// Whether a commitment plan's commitment renews when it ends (API 1.21).
    public var commitmentRenewal: CommitmentRenewal? = nil
    /// What the next renewal costs, in milliunits of `currency` (API 1.12).
    public var renewalPrice: Int64? = nil
    /// ISO 4217 currency of `renewalPrice`.
    public var currency: String? = nil
    /// The offer of the next renewal: FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME.
    public var offerDiscountType: String? = nil
    /// The offer's duration, ISO 8601 (`P1M`…).
    public var offerPeriod: String? = nil
    /// The offer's id (promotional offer, offer code or win-back offer).
    public var offerIdentifier: String? = nil
    /// The win-back offers the customer may take, best first, as Apple lists them (API 1.13).
    public var eligibleWinBackOfferIds: [String]? = nil
    /// The UUID the app set on the chain (may differ from its transactions' after a change).
    public var appAccountToken: String? = nil
    /// One per Apple Account and app (API 1.15).
    public var appTransactionId: String? = nil

    public init(
        originalTransactionId: String, productId: String? = nil, autoRenewProductId: String? = nil,
        autoRenewStatus: Int64? = nil, isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDate: Int64? = nil,
        expirationIntent: Int64? = nil, signedDate: Int64, environment: String = "Production",
        renewalDate: Int64? = nil, offerType: Int64? = nil, priceIncreaseStatus: Int64? = nil,
        recentSubscriptionStartDate: Int64? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.expirationIntent = expirationIntent
        self.signedDate = signedDate
        self.environment = environment
        self.renewalDate = renewalDate
        self.offerType = offerType
        self.priceIncreaseStatus = priceIncreaseStatus
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
    }

    /// Whether this renewal info supersedes `other` for the same chain: newest `signedDate`
    /// wins; same-millisecond versions are ordered by content, never by arrival.
    public func supersedes(_ other: RenewalInfo) -> Bool {
        if signedDate != other.signedDate { return signedDate > other.signedDate }
        if (gracePeriodExpiresDate ?? -1) != (other.gracePeriodExpiresDate ?? -1) {
            return (gracePeriodExpiresDate ?? -1) > (other.gracePeriodExpiresDate ?? -1)
        }
        if (autoRenewStatus ?? -1) != (other.autoRenewStatus ?? -1) {
            return (autoRenewStatus ?? -1) > (other.autoRenewStatus ?? -1)
        }
        if (isInBillingRetryPeriod ?? false) != (other.isInBillingRetryPeriod ?? false) {
            return isInBillingRetryPeriod ?? false
        }
        if (autoRenewProductId ?? "") != (other.autoRenewProductId ?? "") {
            return (autoRenewProductId ?? "") > (other.autoRenewProductId ?? "")
        }
        if (expirationIntent ?? -1) != (other.expirationIntent ?? -1) {
            return (expirationIntent ?? -1) > (other.expirationIntent ?? -1)
        }
        return FactOrder.precedes(other, self)
    }
}
