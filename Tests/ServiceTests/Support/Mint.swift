import JSON
import TestSupport

let second: Int64 = 1000
let hour: Int64 = 3_600_000
let day: Int64 = 86_400_000

/// Signed App Store facts with fixed ids, minted with the test PKI (`TestVectors`).
enum Mint {
    static let vectors = TestVectors.shared

    /// Transaction payload fields; `expires: nil` leaves `expiresDate` out (one-off products).
    static func transaction(
        _ transactionId: String, chain: String? = nil, product: String, type: String = "Auto-Renewable Subscription",
        purchase: Int64, expires: Int64?, signed: Int64, _ extra: [String: JSONValue] = [:]
    ) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [
            "transactionId": .string(transactionId), "originalTransactionId": .string(chain ?? transactionId),
            "webOrderLineItemId": .string("7" + transactionId), "productId": .string(product), "type": .string(type),
            "purchaseDate": .int(purchase), "originalPurchaseDate": .int(purchase),
            "expiresDate": expires.map(JSONValue.int) ?? .null, "signedDate": .int(signed),
            // Each chain its own Apple Account unless a test says otherwise (api.md §7 links users
            // who share one).
            "appTransactionId": .string("7042895" + (chain ?? transactionId)),
        ]
        if type != "Auto-Renewable Subscription" {
            fields["subscriptionGroupIdentifier"] = .null
            fields["transactionReason"] = .string("PURCHASE")
        }
        for (key, value) in extra { fields[key] = value }
        return fields
    }

    static func signed(_ fields: [String: JSONValue]) -> String { vectors.signedTransaction(fields) }

    /// A V2 notification carrying `transaction` (and renewal info linked to its chain when given).
    static func notification(
        _ type: String, _ subtype: String? = nil, transaction: [String: JSONValue]?,
        renewal: [String: JSONValue]? = nil, signedDate: Int64? = nil
    ) -> String {
        var fields: [String: JSONValue] = [:]
        if let signedDate { fields["signedDate"] = .int(signedDate) }
        return vectors.signedNotification(
            type: type, subtype: subtype, transaction: transaction, renewal: renewal, fields: fields)
    }

    /// Renewal info fields (signed now unless given).
    static func renewal(
        autoRenew: Bool = true, product: String = TestService.monthly, billingRetry: Bool = false,
        grace: Int64? = nil, signed: Int64
    ) -> [String: JSONValue] {
        [
            "autoRenewStatus": .int(autoRenew ? 1 : 0), "autoRenewProductId": .string(product),
            "isInBillingRetryPeriod": .bool(billingRetry), "gracePeriodExpiresDate": grace.map(JSONValue.int) ?? .null,
            "signedDate": .int(signed), "expirationIntent": autoRenew ? .null : .int(1),
        ]
    }
}

extension JSONValue {
    /// The element at `index` of an array (nil otherwise), for terse assertions.
    subscript(index: Int) -> JSONValue? {
        guard let array = arrayValue, array.indices.contains(index) else { return nil }
        return array[index]
    }
}
