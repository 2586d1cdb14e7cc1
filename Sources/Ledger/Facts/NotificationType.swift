/// Apple's `notificationType` of App Store Server Notifications V2, as Apple's own library names
/// them (NotificationTypeV2). A fact keeps the raw string (`NotificationFact.notificationType`):
/// a type Apple adds later is recorded and replayed as it came, and reads as nil here.
public enum NotificationType: String, Sendable, Hashable, CaseIterable {
    case subscribed = "SUBSCRIBED"
    case didChangeRenewalPref = "DID_CHANGE_RENEWAL_PREF"
    case didChangeRenewalStatus = "DID_CHANGE_RENEWAL_STATUS"
    case offerRedeemed = "OFFER_REDEEMED"
    case didRenew = "DID_RENEW"
    case expired = "EXPIRED"
    case didFailToRenew = "DID_FAIL_TO_RENEW"
    case gracePeriodExpired = "GRACE_PERIOD_EXPIRED"
    case priceIncrease = "PRICE_INCREASE"
    case refund = "REFUND"
    case refundDeclined = "REFUND_DECLINED"
    case consumptionRequest = "CONSUMPTION_REQUEST"
    case renewalExtended = "RENEWAL_EXTENDED"
    case revoke = "REVOKE"
    case test = "TEST"
    case renewalExtension = "RENEWAL_EXTENSION"
    case refundReversed = "REFUND_REVERSED"
    case externalPurchaseToken = "EXTERNAL_PURCHASE_TOKEN"
    case oneTimeCharge = "ONE_TIME_CHARGE"
    case rescindConsent = "RESCIND_CONSENT"
    case metadataUpdate = "METADATA_UPDATE"
    case migration = "MIGRATION"
    case priceChange = "PRICE_CHANGE"
}

extension NotificationFact {
    /// The type, when it is one this version knows.
    public var type: NotificationType? { NotificationType(rawValue: notificationType) }
}
