/// Subscription status as docs/api.md spells it.
public enum SubscriptionStatus: String, Sendable, Hashable, CaseIterable {
    case active = "active"
    case inGracePeriod = "in_grace_period"
    case inBillingRetry = "in_billing_retry"
    case expired = "expired"
    case revoked = "revoked"

    /// Whether the status gives access.
    public var hasAccess: Bool { self == .active || self == .inGracePeriod }
}

/// A chain judged at one instant.
public struct ChainStatus: Sendable, Hashable {
    public var status: SubscriptionStatus
    /// The product of the current period (after an upgrade: the new one).
    public var productId: String
    /// Raw Apple `type` of the current transaction.
    public var transactionType: String
    public var currentTransactionId: String
    public var purchasedAt: Int64
    public var expiresAt: Int64?
    public var gracePeriodExpiresAt: Int64?
    public var revokedAt: Int64?
    public var autoRenew: Bool
    public var autoRenewProductId: String?
    public var environment: String
    public var ownership: String
    public var offerType: Int64?
    public var offerDiscountType: String?
    /// The current transaction's `appTransactionId` (nil before Apple sent it).
    public var appTransactionId: String? = nil
    /// The chain this one was migrated from (Notifications 2.16), if Apple said so.
    public var previousOriginalTransactionId: String? = nil
    /// Where a monthly subscription with a 12-month commitment stands (nil for other plans).
    public var commitment: CommitmentStatus? = nil
    /// What the newest renewal info says of the next renewal (nil before any renewal info).
    public var renewal: RenewalTerms? = nil

    /// Whether the current period is a free trial.
    public var isTrial: Bool { offerDiscountType == "FREE_TRIAL" }
    /// Whether the current period uses an introductory offer.
    public var isIntroductoryOffer: Bool { offerType == 1 }
    /// Access now and auto-renew on.
    public var willRenew: Bool { autoRenew && status.hasAccess }
}

/// A commitment plan's progress as the Customer shows it (api.md §8 `commitment`).
public struct CommitmentStatus: Sendable, Hashable {
    /// Apple's `billingPeriodNumber` of the current period.
    public var period: Int64?
    /// Apple's `totalBillingPeriods`.
    public var periods: Int64?
    /// Apple's `commitmentExpiresDate`: for display; access follows the period's `expiresAt`.
    public var expiresAt: Int64?
    /// The renewal info's `commitmentAutoRenewStatus` (on until Apple says otherwise).
    public var willRenew: Bool
    /// Apple's `commitmentPrice`, the whole commitment's, in milliunits.
    public var price: Int64?

    init(_ current: Transaction, renewal: RenewalInfo?) {
        period = current.commitment?.billingPeriodNumber
        periods = current.commitment?.totalBillingPeriods
        expiresAt = current.commitment?.commitmentExpiresDate
        willRenew = renewal?.commitmentRenewal?.commitmentAutoRenewStatus.map { $0 == 1 } ?? true
        price = current.commitment?.commitmentPrice
    }
}

/// The next renewal's terms as the newest renewal info states them (api.md §8 `renewal`):
/// display only — they change no status, no money and no change of the feed.
public struct RenewalTerms: Sendable, Hashable {
    /// Apple's `renewalPrice`, in milliunits of `currency`.
    public var renewalPrice: Int64?
    public var currency: String?
    /// The offer of the next renewal: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int64?
    /// FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME.
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var offerIdentifier: String?
    /// Best first, as Apple lists them; empty when Apple lists none.
    public var eligibleWinBackOfferIds: [String]
    public var appAccountToken: String?

    init(_ r: RenewalInfo) {
        renewalPrice = r.renewalPrice
        currency = r.currency
        offerType = r.offerType
        offerDiscountType = r.offerDiscountType
        offerPeriod = r.offerPeriod
        offerIdentifier = r.offerIdentifier
        eligibleWinBackOfferIds = r.eligibleWinBackOfferIds ?? []
        appAccountToken = r.appAccountToken
    }
}
