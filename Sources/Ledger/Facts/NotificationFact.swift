/// The receipt of one App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`).
///
/// The transaction and renewal info it carries are recorded as their own facts; this one
/// keeps the notification itself (idempotency by `notificationUUID`, and the trace).
/// [notificationType](https://developer.apple.com/documentation/appstoreservernotifications/notificationtype)
public struct NotificationFact: Sendable, Hashable {
    public var notificationUUID: String
    public var notificationType: String
    public var subtype: String?
    public var signedDate: Int64
    public var environment: String?
    public var originalTransactionId: String?
    public var transactionId: String?
    /// The `appTransactionId` of the verified app transaction in `appData` (RESCIND_CONSENT).
    public var appTransactionId: String?

    public init(
        notificationUUID: String, notificationType: String, subtype: String? = nil, signedDate: Int64,
        environment: String? = nil, originalTransactionId: String? = nil, transactionId: String? = nil,
        appTransactionId: String? = nil
    ) {
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedDate = signedDate
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.appTransactionId = appTransactionId
    }

    /// A parent withdrew consent for a minor (Notifications 2.19, api.md §8): every user with a
    /// transaction of `appTransactionId` is told.
    public var rescindsConsent: Bool { type == .rescindConsent && appTransactionId != nil }
}
