import JSON

/// Look Up Order ID's answer (Apple's `OrderLookupResponse`): `status` 0 when the order id is
/// valid for the app (Apple's `OrderLookupStatus.valid`), 1 when it is not (`invalid`), and
/// the order's in-app purchases as Apple signed them (JWS, unverified).
public struct OrderLookup: Sendable, Equatable {
    public static let valid = 0
    public static let invalid = 1

    public var environment: AppStoreServerEnvironment
    public var status: Int
    public var signedTransactions: [String]

    public init(environment: AppStoreServerEnvironment, status: Int, signedTransactions: [String]) {
        self.environment = environment
        self.status = status
        self.signedTransactions = signedTransactions
    }
}

extension AppStoreServerClient {
    /// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): the purchases of the order id on a
    /// customer's App Store e-mail receipt. Apple answers an order it does not know with 200 and
    /// `status` 1, not an error, so only a 4040010 moves on to the next of `searchOrder`.
    public func lookUpOrderId(
        _ orderId: String, environment: AppStoreServerEnvironment? = nil
    ) throws(AppStoreServerError) -> OrderLookup {
        let path = "/inApps/v1/lookup/" + (try Self.segment(orderId, "orderId"))
        let (found, body) = try sendFindingEnvironment(Call(method: "GET", path: path), environment)
        let json = try Self.object(body, "order lookup")
        guard let status = json["status"]?.int64Value else { throw .malformedResponse("order lookup without status") }
        var signed: [String] = []
        // Apple leaves the list out (or empty) for an invalid order id.
        if let list = json["signedTransactions"], !list.isNull {
            guard let items = list.arrayValue else { throw .malformedResponse("signedTransactions is not an array") }
            for item in items {
                guard let jws = item.stringValue else {
                    throw .malformedResponse("a signedTransactions entry is not a string")
                }
                signed.append(jws)
            }
        }
        return OrderLookup(environment: found, status: Int(status), signedTransactions: signed)
    }
}
