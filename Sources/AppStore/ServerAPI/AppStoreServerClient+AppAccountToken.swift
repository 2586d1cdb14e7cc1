import JSON

extension AppStoreServerClient {
    /// Set App Account Token (`PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`,
    /// API 1.16): sets or replaces the `appAccountToken` of a purchase, which Apple then signs
    /// into the chain's transactions and renewal infos. Apple answers 200 with no body.
    /// - Returns: the environment that took it.
    @discardableResult
    public func setAppAccountToken(
        _ originalTransactionId: String, appAccountToken: String, environment: AppStoreServerEnvironment? = nil
    ) throws(AppStoreServerError) -> AppStoreServerEnvironment {
        let path =
            "/inApps/v1/transactions/" + (try Self.segment(originalTransactionId, "originalTransactionId"))
            + "/appAccountToken"
        let body = JSONValue.object(["appAccountToken": .string(appAccountToken)]).serialized()
        return try sendFindingEnvironment(Call(method: "PUT", path: path, body: body), environment).0
    }
}
