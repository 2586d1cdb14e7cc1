import JSON

/// App Store Server Notifications V2 `ResponseBodyV2DecodedPayload`.
///
/// [responseBodyV2DecodedPayload](https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload)
public struct NotificationPayload: Sendable, Hashable {
    public var notificationType: String?
    public var subtype: String?
    /// Stable across Apple's retries: the idempotency key.
    public var notificationUUID: String?
    public var version: String?
    public var signedDate: Int64?
    public var data: NotificationData?
    public var summary: NotificationSummary?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var appData: NotificationAppData?
    /// The payload exactly as signed, for storage.
    public var rawJSON: [UInt8]

    public init(json p: JSONValue, rawJSON: [UInt8]) {
        self.rawJSON = rawJSON
        notificationType = p.string("notificationType")
        subtype = p.string("subtype")
        notificationUUID = p.string("notificationUUID")
        version = p.string("version")
        signedDate = p.millis("signedDate")
        data = p.object("data").map(NotificationData.init(json:))
        summary = p.object("summary").map(NotificationSummary.init(json:))
        externalPurchaseToken = p.object("externalPurchaseToken").map(ExternalPurchaseToken.init(json:))
        appData = p.object("appData").map(NotificationAppData.init(json:))
    }

    /// (bundleId, appAppleId, environment) the notification claims, from whichever body it carries.
    var appClaim: (bundleId: String?, appAppleId: Int64?, environment: String?) {
        if let d = data { return (d.bundleId, d.appAppleId, d.environment) }
        if let s = summary { return (s.bundleId, s.appAppleId, s.environment) }
        if let t = externalPurchaseToken {
            let sandbox = t.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            return (t.bundleId, t.appAppleId, sandbox ? AppStoreEnvironment.sandbox : AppStoreEnvironment.production)
        }
        if let a = appData { return (a.bundleId, a.appAppleId, a.environment) }
        return (nil, nil, nil)
    }
}

/// [data](https://developer.apple.com/documentation/appstoreservernotifications/data)
public struct NotificationData: Sendable, Hashable {
    public var environment: String?
    /// Absent in Sandbox.
    public var appAppleId: Int64?
    public var bundleId: String?
    public var bundleVersion: String?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
    /// Subscription status as of `signedDate`: 1 active, 2 expired, 3 billing retry, 4 grace, 5 revoked.
    public var status: Int?
    public var consumptionRequestReason: String?

    init(json p: JSONValue) {
        environment = p.string("environment")
        appAppleId = p.int64("appAppleId")
        bundleId = p.string("bundleId")
        bundleVersion = p.string("bundleVersion")
        signedTransactionInfo = p.string("signedTransactionInfo")
        signedRenewalInfo = p.string("signedRenewalInfo")
        status = p.int("status")
        consumptionRequestReason = p.string("consumptionRequestReason")
    }
}

/// [summary](https://developer.apple.com/documentation/appstoreservernotifications/summary)
public struct NotificationSummary: Sendable, Hashable {
    public var environment: String?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var productId: String?
    public var requestIdentifier: String?
    public var storefrontCountryCodes: [String]?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    init(json p: JSONValue) {
        environment = p.string("environment")
        appAppleId = p.int64("appAppleId")
        bundleId = p.string("bundleId")
        productId = p.string("productId")
        requestIdentifier = p.string("requestIdentifier")
        storefrontCountryCodes = p.strings("storefrontCountryCodes")
        succeededCount = p.int64("succeededCount")
        failedCount = p.int64("failedCount")
    }
}

/// [externalPurchaseToken](https://developer.apple.com/documentation/appstoreservernotifications/externalpurchasetoken)
public struct ExternalPurchaseToken: Sendable, Hashable {
    /// Starts with "SANDBOX" for sandbox tokens.
    public var externalPurchaseId: String?
    public var tokenCreationDate: Int64?
    public var appAppleId: Int64?
    public var bundleId: String?

    init(json p: JSONValue) {
        externalPurchaseId = p.string("externalPurchaseId")
        tokenCreationDate = p.millis("tokenCreationDate")
        appAppleId = p.int64("appAppleId")
        bundleId = p.string("bundleId")
    }
}

/// [appData](https://developer.apple.com/documentation/appstoreservernotifications/appdata)
public struct NotificationAppData: Sendable, Hashable {
    public var appAppleId: Int64?
    public var bundleId: String?
    public var environment: String?
    /// Verified with the notification (`VerifiedNotification.appTransaction`).
    public var signedAppTransactionInfo: String?

    init(json p: JSONValue) {
        appAppleId = p.int64("appAppleId")
        bundleId = p.string("bundleId")
        environment = p.string("environment")
        signedAppTransactionInfo = p.string("signedAppTransactionInfo")
    }
}

/// A verified notification with its nested signed transaction and renewal info verified too.
public struct VerifiedNotification: Sendable, Hashable {
    public var payload: NotificationPayload
    public var transaction: JWSTransaction?
    public var renewalInfo: JWSRenewalInfo?
    /// `appData.signedAppTransactionInfo`, verified (RESCIND_CONSENT).
    public var appTransaction: AppTransaction? = nil
}
