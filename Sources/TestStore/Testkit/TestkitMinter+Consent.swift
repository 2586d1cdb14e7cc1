import JSON

/// RESCIND_CONSENT (Notifications 2.19) as the test store's Apple sends it.
extension TestkitMinter {
    /// The Apple Account of every purchase the test store mints (one device, one tester).
    static let appleAccount = "704289572311887741"

    /// Notification types about no transaction (no `--original-transaction-id`).
    static let aboutNoChain: Set<String> = ["TEST", "RESCIND_CONSENT"]

    /// A parent withdrew consent: no `data`, an `appData` with the test store's signed app
    /// transaction, as Apple sends it; every user who bought in the test store is told.
    static func rescindConsent(bundleId: String, now: Int64, uuid: String, sign: (JSONValue) -> String) -> JSONValue {
        let appTransaction: JSONValue = .object([
            "receiptType": .string(environment), "bundleId": .string(bundleId), "applicationVersion": "1.0",
            "receiptCreationDate": .int(now), "originalPurchaseDate": .int(now), "originalApplicationVersion": "1.0",
            "appTransactionId": .string(appleAccount), "originalPlatform": "iOS",
        ])
        return .object([
            "notificationType": "RESCIND_CONSENT", "notificationUUID": .string(uuid), "version": "2.0",
            "signedDate": .int(now),
            "appData": .object([
                "bundleId": .string(bundleId), "environment": .string(environment),
                "signedAppTransactionInfo": .string(sign(appTransaction)),
            ]),
        ])
    }
}
