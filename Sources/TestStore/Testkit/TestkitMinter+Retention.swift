import JSON

/// Retention Messaging (Get Retention Message) as the test store's Apple asks it.
extension TestkitMinter {
    /// The appAppleId a realtime request names when the config gives the app none: Apple's
    /// decoder requires the field, and outside Production nobody checks it (the verifier picks
    /// the one app accepting LocalTesting).
    static let placeholderAppAppleId: Int64 = 1_234_567_890

    /// Apple's `DecodedRealtimeRequestBody` about a subscription the store minted: the App Store
    /// asks when the subscriber is about to cancel, naming the chain, the product (the chain's
    /// latest, unless `productId` says otherwise) and the customer's locale.
    static func retentionRequest(
        originalTransactionId chainId: String, productId: String?, userLocale: String, appAppleId: Int64?, now: Int64,
        uuid: String, state: TestkitState
    ) throws(TestkitError) -> JSONValue {
        guard let latest = state.chain(chainId).last else {
            throw TestkitError("no transaction with originalTransactionId \(chainId) was minted by this test store")
        }
        guard state.transactions[latest]["type"]?.stringValue == TestkitProductType.autoRenewable.appleType else {
            throw TestkitError(
                "Apple asks for retention messages about auto-renewable subscriptions; \(chainId) is not one")
        }
        let product = productId ?? state.transactions[latest]["productId"]?.stringValue ?? ""
        return .object([
            "originalTransactionId": .string(chainId), "appAppleId": .int(appAppleId ?? placeholderAppAppleId),
            "productId": .string(product), "userLocale": .string(userLocale), "requestIdentifier": .string(uuid),
            "signedDate": .int(now), "environment": .string(environment),
        ])
    }
}
