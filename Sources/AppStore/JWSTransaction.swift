import JSON

/// A verified transaction: StoreKit 2 `JWSTransactionDecodedPayload`, or a legacy receipt entry.
///
/// [JWSTransactionDecodedPayload](https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload)
/// Ids are strings, dates Int64 ms, enums raw strings (unknown values survive).
public struct JWSTransaction: Sendable, Hashable {
    public var originalTransactionId: String?
    public var transactionId: String?
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int?
    /// "Auto-Renewable Subscription", "Non-Consumable", "Consumable", "Non-Renewing Subscription".
    public var type: String?
    public var appAccountToken: String?
    /// PURCHASED, FAMILY_SHARED.
    public var inAppOwnershipType: String?
    public var signedDate: Int64?
    public var revocationReason: Int?
    public var revocationDate: Int64?
    public var isUpgraded: Bool?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var environment: String?
    public var storefront: String?
    public var storefrontId: String?
    /// PURCHASE, RENEWAL.
    public var transactionReason: String?
    public var currency: String?
    /// Milliunits of `currency`.
    public var price: Int64?
    public var offerDiscountType: String?
    public var appTransactionId: String?
    /// Notifications 2.16: the chain this subscription was migrated from (in no library model
    /// of Apple's; read from the raw JSON).
    public var previousOriginalTransactionId: String?
    public var offerPeriod: String?
    /// REFUND_FULL, REFUND_PRORATED, FAMILY_REVOKE.
    public var revocationType: String?
    /// Milliunits (50000 = 50 %).
    public var revocationPercentage: Int?
    public var advancedCommerceInfo: JSONValue?
    public var billingPlanType: String?
    public var commitmentInfo: JSONValue?
    /// The payload exactly as signed (StoreKit 2) or as received (verifyReceipt entry), for storage.
    public var rawJSON: [UInt8]

    public init(rawJSON: [UInt8] = []) { self.rawJSON = rawJSON }

    /// Decodes a `JWSTransactionDecodedPayload` object.
    public init(json p: JSONValue, rawJSON: [UInt8]) {
        self.rawJSON = rawJSON
        originalTransactionId = p.string("originalTransactionId")
        transactionId = p.string("transactionId")
        webOrderLineItemId = p.string("webOrderLineItemId")
        bundleId = p.string("bundleId")
        productId = p.string("productId")
        subscriptionGroupIdentifier = p.string("subscriptionGroupIdentifier")
        purchaseDate = p.millis("purchaseDate")
        originalPurchaseDate = p.millis("originalPurchaseDate")
        expiresDate = p.millis("expiresDate")
        quantity = p.int("quantity")
        type = p.string("type")
        appAccountToken = p.string("appAccountToken")
        inAppOwnershipType = p.string("inAppOwnershipType")
        signedDate = p.millis("signedDate")
        revocationReason = p.int("revocationReason")
        revocationDate = p.millis("revocationDate")
        isUpgraded = p.bool("isUpgraded")
        offerType = p.int("offerType")
        offerIdentifier = p.string("offerIdentifier")
        environment = p.string("environment")
        storefront = p.string("storefront")
        storefrontId = p.string("storefrontId")
        transactionReason = p.string("transactionReason")
        currency = p.string("currency")
        price = p.int64("price")
        offerDiscountType = p.string("offerDiscountType")
        appTransactionId = p.string("appTransactionId")
        previousOriginalTransactionId = p.string("previousOriginalTransactionId")
        offerPeriod = p.string("offerPeriod")
        revocationType = p.string("revocationType")
        revocationPercentage = p.int("revocationPercentage")
        advancedCommerceInfo = p.object("advancedCommerceInfo")
        billingPlanType = p.string("billingPlanType")
        commitmentInfo = p.object("commitmentInfo")
    }
}
