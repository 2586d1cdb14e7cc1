import JSON

/// A signed app transaction's payload
/// ([AppTransaction](https://developer.apple.com/documentation/appstoreserverapi/apptransaction)):
/// one per Apple Account and app. Field names are Apple's (its libraries' `AppTransaction`
/// model); a notification's `appData.signedAppTransactionInfo` carries one (RESCIND_CONSENT).
public struct AppTransaction: Sendable, Hashable {
    /// The environment: Production, Sandbox, Xcode, LocalTesting.
    public var receiptType: String?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    /// The date of the signature, in ms: what the chain is checked at, as Apple's libraries do.
    public var receiptCreationDate: Int64?
    public var originalPurchaseDate: Int64?
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: Int64?
    /// One per Apple Account and app (App Store Server API 1.15).
    public var appTransactionId: String?
    public var originalPlatform: String?
    /// The payload exactly as signed.
    public var rawJSON: [UInt8]

    public init(json p: JSONValue, rawJSON: [UInt8]) {
        self.rawJSON = rawJSON
        receiptType = p.string("receiptType")
        appAppleId = p.int64("appAppleId")
        bundleId = p.string("bundleId")
        applicationVersion = p.string("applicationVersion")
        versionExternalIdentifier = p.int64("versionExternalIdentifier")
        receiptCreationDate = p.millis("receiptCreationDate")
        originalPurchaseDate = p.millis("originalPurchaseDate")
        originalApplicationVersion = p.string("originalApplicationVersion")
        deviceVerification = p.string("deviceVerification")
        deviceVerificationNonce = p.string("deviceVerificationNonce")
        preorderDate = p.millis("preorderDate")
        appTransactionId = p.string("appTransactionId")
        originalPlatform = p.string("originalPlatform")
    }
}
