/// The entitlements document of `GET /v1/users/{userId}` (docs/api.md §2), judged at one instant.
public struct Customer: Sendable, Hashable {
    public var userId: String
    public var entitlements: [String: EntitlementState]
    /// Ordered by originalTransactionId.
    public var subscriptions: [SubscriptionView]
    /// Ordered by productId, then transactionId.
    public var nonConsumables: [NonConsumableView]
    public var balances: [String: Int64]
    /// Other users who bought with the same Apple Account (api.md §7): a hint for support.
    public var sameAppleAccountAs: [String] = []
    /// When Apple said a parent withdrew consent for this user's Apple Account (api.md §8).
    public var consentRescindedAt: Int64?
    /// Sequence of the last event applied for this user.
    public var version: Int64

    public init(
        userId: String, entitlements: [String: EntitlementState] = [:], subscriptions: [SubscriptionView] = [],
        nonConsumables: [NonConsumableView] = [], balances: [String: Int64] = [:], version: Int64 = 0
    ) {
        self.userId = userId
        self.entitlements = entitlements
        self.subscriptions = subscriptions
        self.nonConsumables = nonConsumables
        self.balances = balances
        self.version = version
    }
}

/// Where an entitlement comes from; raw values are the API's `source`.
public enum EntitlementSource: String, Sendable, Hashable {
    case subscription = "subscription"
    case nonRenewingSubscription = "non_renewing_subscription"
    case nonConsumable = "non_consumable"
    case admin = "admin"
    /// A promotional grant (api.md §6: `POST /v1/users/{userId}/grants`).
    case promotional = "promotional"
}

/// One entitlement: active while any product (or admin grant) granting it gives access;
/// otherwise the best lapsed grant, with `active: false`.
public struct EntitlementState: Sendable, Hashable {
    public var active: Bool
    public var expiresAt: Int64?
    /// nil for an admin grant.
    public var productId: String?
    public var source: EntitlementSource
    public var originalTransactionId: String?
    public var willRenew: Bool
    public var inGracePeriod: Bool
    /// The promotional grant that decides the entitlement (source `promotional`), else nil.
    public var grantId: String?

    public init(
        active: Bool, expiresAt: Int64?, productId: String?, source: EntitlementSource,
        originalTransactionId: String?, willRenew: Bool, inGracePeriod: Bool, grantId: String? = nil
    ) {
        self.grantId = grantId
        self.active = active
        self.expiresAt = expiresAt
        self.productId = productId
        self.source = source
        self.originalTransactionId = originalTransactionId
        self.willRenew = willRenew
        self.inGracePeriod = inGracePeriod
    }

    /// Whether `self` should represent the entitlement rather than `other`: access first, then
    /// the later expiry (none = never), then a fixed order of ids so the choice never depends
    /// on iteration order.
    func isPreferred(over other: EntitlementState) -> Bool {
        if active != other.active { return active }
        let mine = expiresAt ?? .max
        let theirs = other.expiresAt ?? .max
        if mine != theirs { return mine > theirs }
        if source != other.source { return source.rawValue < other.source.rawValue }
        if (originalTransactionId ?? "") != (other.originalTransactionId ?? "") {
            return (originalTransactionId ?? "") < (other.originalTransactionId ?? "")
        }
        if (productId ?? "") != (other.productId ?? "") { return (productId ?? "") < (other.productId ?? "") }
        return (grantId ?? "") < (other.grantId ?? "")
    }
}

/// One subscription chain in the user document.
public struct SubscriptionView: Sendable, Hashable {
    public var originalTransactionId: String
    public var productId: String
    public var status: SubscriptionStatus
    public var expiresAt: Int64?
    public var gracePeriodExpiresAt: Int64?
    public var autoRenew: Bool
    public var autoRenewProductId: String?
    public var environment: String
    public var ownership: String
    public var revokedAt: Int64?
    public var isTrial: Bool
    public var isIntroductoryOffer: Bool
    public var offerType: Int64?
    /// The current period's transaction and its raw Apple `type` (not in the document: what
    /// the change feed tells a renewal from a status change by).
    public var transactionId: String
    public var transactionType: String
    /// Apple's `appTransactionId` of the current transaction, when Apple sent one.
    public var appTransactionId: String?
    /// The chain this subscription was migrated from (Notifications 2.16), if any.
    public var previousOriginalTransactionId: String?
    /// A monthly subscription with a 12-month commitment's progress (nil for other plans).
    public var commitment: CommitmentStatus?
    /// The next renewal's terms from the newest renewal info (nil before any).
    public var renewal: RenewalTerms?

    public init(originalTransactionId: String, judged: ChainStatus) {
        self.originalTransactionId = originalTransactionId
        productId = judged.productId
        status = judged.status
        expiresAt = judged.expiresAt
        gracePeriodExpiresAt = judged.gracePeriodExpiresAt
        autoRenew = judged.autoRenew
        autoRenewProductId = judged.autoRenewProductId
        environment = judged.environment
        ownership = judged.ownership
        revokedAt = judged.revokedAt
        isTrial = judged.isTrial
        isIntroductoryOffer = judged.isIntroductoryOffer
        offerType = judged.offerType
        transactionId = judged.currentTransactionId
        transactionType = judged.transactionType
        appTransactionId = judged.appTransactionId
        previousOriginalTransactionId = judged.previousOriginalTransactionId
        commitment = judged.commitment
        renewal = judged.renewal
    }
}

/// One non-consumable purchase in the user document.
public struct NonConsumableView: Sendable, Hashable {
    public var productId: String
    public var transactionId: String
    public var purchasedAt: Int64
    public var revokedAt: Int64?
    public var ownership: String
    /// Apple's `appTransactionId`, when Apple sent one.
    public var appTransactionId: String?

    public init(
        productId: String, transactionId: String, purchasedAt: Int64, revokedAt: Int64?, ownership: String,
        appTransactionId: String? = nil
    ) {
        self.productId = productId
        self.transactionId = transactionId
        self.purchasedAt = purchasedAt
        self.revokedAt = revokedAt
        self.ownership = ownership
        self.appTransactionId = appTransactionId
    }
}
