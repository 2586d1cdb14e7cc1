import JSON

/// A verifyReceipt answer with status 0, mapped onto the StoreKit 2 models.
public struct LegacyReceipt: Sendable, Hashable {
    public var status: Int
    /// "Production" or "Sandbox".
    public var environment: String?
    public var bundleId: String?
    /// `latest_receipt_info` (all but finished consumables), or `receipt.in_app` when absent.
    public var transactions: [JWSTransaction]
    public var renewalInfos: [JWSRenewalInfo]
    public var latestReceipt: String?
    /// The whole response body.
    public var rawJSON: [UInt8]

    /// Maps a status-0 response body. Apple's `receipt.request_date_ms` (when Apple answered) is
    /// each fact's `signedDate`; an answer without it is dated `askedAt`, when the caller asked,
    /// which is as close to Apple's instant as the caller can know.
    init(json: JSONValue, rawJSON: [UInt8], askedAt: Int64) {
        self.rawJSON = rawJSON
        status = json.int("status") ?? 0
        environment = json.string("environment")
        let receipt = json["receipt"] ?? .null
        bundleId = receipt.string("bundle_id")
        latestReceipt = json.string("latest_receipt")
        let requestDate = receipt.legacyInt64("request_date_ms") ?? askedAt
        let entries = json["latest_receipt_info"]?.arrayValue ?? receipt["in_app"]?.arrayValue ?? []
        transactions = entries.map { [environment, bundleId] in
            JWSTransaction(receiptEntry: $0, bundleId: bundleId, environment: environment, signedDate: requestDate)
        }
        renewalInfos = (json["pending_renewal_info"]?.arrayValue ?? []).map { [environment] in
            JWSRenewalInfo(pendingRenewalInfo: $0, environment: environment, signedDate: requestDate)
        }
    }
}

extension JSONValue {
    /// verifyReceipt sends numbers and booleans as strings ("1697…", "true", "1").
    func legacyInt64(_ key: String) -> Int64? { string(key).flatMap { Int64($0) ?? Double($0).map { Int64($0) } } }
    func legacyInt(_ key: String) -> Int? { legacyInt64(key).flatMap { Int(exactly: $0) } }
    func legacyBool(_ key: String) -> Bool? {
        if let b = bool(key) { return b }
        switch string(key) {
        case "true"?, "1"?: return true
        case "false"?, "0"?: return false
        default: return nil
        }
    }
}

extension JWSTransaction {
    /// Maps one `in_app` / `latest_receipt_info` entry (string fields, `*_ms` dates).
    public init(receiptEntry e: JSONValue, bundleId: String?, environment: String?, signedDate: Int64?) {
        self.init(rawJSON: e.serialized())
        originalTransactionId = e.string("original_transaction_id")
        transactionId = e.string("transaction_id")
        webOrderLineItemId = e.string("web_order_line_item_id")
        self.bundleId = bundleId
        productId = e.string("product_id")
        subscriptionGroupIdentifier = e.string("subscription_group_identifier")
        purchaseDate = e.legacyInt64("purchase_date_ms")
        originalPurchaseDate = e.legacyInt64("original_purchase_date_ms")
        expiresDate = e.legacyInt64("expires_date_ms")
        quantity = e.legacyInt("quantity")
        if expiresDate != nil || webOrderLineItemId != nil { type = "Auto-Renewable Subscription" }
        appAccountToken = e.string("app_account_token")
        inAppOwnershipType = e.string("in_app_ownership_type")
        self.signedDate = signedDate
        revocationDate = e.legacyInt64("cancellation_date_ms")
        revocationReason = e.legacyInt("cancellation_reason")
        isUpgraded = e.legacyBool("is_upgraded")
        if e.legacyBool("is_trial_period") == true {
            offerType = 1
            offerDiscountType = "FREE_TRIAL"
        } else if e.legacyBool("is_in_intro_offer_period") == true {
            offerType = 1
        } else if let promo = e.string("promotional_offer_id") {
            offerType = 2
            offerIdentifier = promo
        } else if let code = e.string("offer_code_ref_name") {
            offerType = 3
            offerIdentifier = code
        }
        self.environment = environment
    }
}

extension JWSRenewalInfo {
    /// Maps one `pending_renewal_info` entry.
    public init(pendingRenewalInfo e: JSONValue, environment: String?, signedDate: Int64?) {
        self.init(rawJSON: e.serialized())
        autoRenewProductId = e.string("auto_renew_product_id")
        autoRenewStatus = e.legacyInt("auto_renew_status")
        expirationIntent = e.legacyInt("expiration_intent")
        gracePeriodExpiresDate = e.legacyInt64("grace_period_expires_date_ms")
        isInBillingRetryPeriod = e.legacyBool("is_in_billing_retry_period")
        originalTransactionId = e.string("original_transaction_id")
        productId = e.string("product_id")
        priceIncreaseStatus = e.legacyInt("price_consent_status")
        if let promo = e.string("promotional_offer_id") {
            offerType = 2
            offerIdentifier = promo
        } else if let code = e.string("offer_code_ref_name") {
            offerType = 3
            offerIdentifier = code
        }
        self.environment = environment
        self.signedDate = signedDate
    }
}
