/// The notification types `testkit notify` knows.
extension TestkitMinter {
    /// Notification types the test store mints (those whose `data` carries a transaction, TEST,
    /// and RESCIND_CONSENT with its `appData`), with their subtypes and whether one is required.
    /// Summary-style types (RENEWAL_EXTENSION, EXTERNAL_PURCHASE_TOKEN, Advanced Commerce) are not
    /// minted.
    static let notificationTypes: [String: (subtypes: Set<String>, required: Bool)] = [
        "SUBSCRIBED": (["INITIAL_BUY", "RESUBSCRIBE"], false),
        "DID_RENEW": (["BILLING_RECOVERY"], false),
        "DID_FAIL_TO_RENEW": (["GRACE_PERIOD"], false),
        "GRACE_PERIOD_EXPIRED": ([], false),
        "EXPIRED": (["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"], false),
        "DID_CHANGE_RENEWAL_PREF": (["UPGRADE", "DOWNGRADE"], false),
        "DID_CHANGE_RENEWAL_STATUS": (["AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED"], true),
        "OFFER_REDEEMED": (["INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", "DOWNGRADE"], false),
        "PRICE_INCREASE": (["PENDING", "ACCEPTED"], true),
        "REFUND": ([], false), "REFUND_DECLINED": ([], false), "REFUND_REVERSED": ([], false),
        "REVOKE": ([], false), "CONSUMPTION_REQUEST": ([], false), "RENEWAL_EXTENDED": ([], false),
        "ONE_TIME_CHARGE": ([], false), "TEST": ([], false), "RESCIND_CONSENT": ([], false),
    ]

    /// Types that only make sense for an auto-renewable subscription.
    static let subscriptionTypes: Set<String> = [
        "SUBSCRIBED", "DID_RENEW", "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "EXPIRED", "DID_CHANGE_RENEWAL_PREF",
        "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED", "PRICE_INCREASE", "RENEWAL_EXTENDED",
    ]
}
