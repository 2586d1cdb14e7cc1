import JSON

/// Verified renewal info: `JWSRenewalInfoDecodedPayload`, or a legacy `pending_renewal_info` entry.
///
/// [JWSRenewalInfoDecodedPayload](https://developer.apple.com/documentation/appstoreserverapi/jwsrenewalinfodecodedpayload)
/// It carries no bundleId: bind it to its chain through `originalTransactionId`.
public struct JWSRenewalInfo: Sendable, Hashable {
    /// 1 cancelled, 2 billing error, 3 no price-increase consent, 4 product unavailable, 5 other.
    public var expirationIntent: Int?
    public var originalTransactionId: String?
    public var autoRenewProductId: String?
    public var productId: String?
    /// 0 off, 1 on.
    public var autoRenewStatus: Int?
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: Int?
    public var gracePeriodExpiresDate: Int64?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var signedDate: Int64?
    public var environment: String?
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var currency: String?
    /// Milliunits of `currency`.
    public var renewalPrice: Int64?
    public var offerDiscountType: String?
    public var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    public var appTransactionId: String?
    public var offerPeriod: String?
    public var advancedCommerceInfo: JSONValue?
    public var commitmentInfo: JSONValue?
    public var renewalBillingPlanType: String?
    /// The payload exactly as signed (or the receipt entry as received), for storage.
    public var rawJSON: [UInt8]

    public init(rawJSON: [UInt8] = []) { self.rawJSON = rawJSON }

    /// Decodes a `JWSRenewalInfoDecodedPayload` object.
    public init(json p: JSONValue, rawJSON: [UInt8]) {
        self.rawJSON = rawJSON
        expirationIntent = p.int("expirationIntent")
        originalTransactionId = p.string("originalTransactionId")
        autoRenewProductId = p.string("autoRenewProductId")
        productId = p.string("productId")
        autoRenewStatus = p.int("autoRenewStatus")
        isInBillingRetryPeriod = p.bool("isInBillingRetryPeriod")
        priceIncreaseStatus = p.int("priceIncreaseStatus")
        gracePeriodExpiresDate = p.millis("gracePeriodExpiresDate")
        offerType = p.int("offerType")
        offerIdentifier = p.string("offerIdentifier")
        signedDate = p.millis("signedDate")
        environment = p.string("environment")
        recentSubscriptionStartDate = p.millis("recentSubscriptionStartDate")
        renewalDate = p.millis("renewalDate")
        currency = p.string("currency")
        renewalPrice = p.int64("renewalPrice")
        offerDiscountType = p.string("offerDiscountType")
        eligibleWinBackOfferIds = p.strings("eligibleWinBackOfferIds")
        appAccountToken = p.string("appAccountToken")
        appTransactionId = p.string("appTransactionId")
        offerPeriod = p.string("offerPeriod")
        advancedCommerceInfo = p.object("advancedCommerceInfo")
        commitmentInfo = p.object("commitmentInfo")
        renewalBillingPlanType = p.string("renewalBillingPlanType")
    }
}
