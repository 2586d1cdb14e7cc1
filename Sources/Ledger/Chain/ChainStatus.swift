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
