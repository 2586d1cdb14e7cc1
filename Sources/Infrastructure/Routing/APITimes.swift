import JSON

/// Every JSON answer spells instants as RFC 3339 (docs/api.md §2). The log and the chain's facts
/// keep Apple's epoch milliseconds (they are Apple's payloads, and analysts' SQL reads them);
/// this rewrites those fields where such JSON is handed to a client.
package enum APITimes {
    /// Field names that hold an instant in epoch milliseconds in Apple's payloads and in the
    /// ledger's event data.
    package static let instantFields: Set<String> = [
        "purchaseDate", "originalPurchaseDate", "expiresDate", "signedDate", "revocationDate",
        "gracePeriodExpiresDate", "renewalDate", "recentSubscriptionStartDate", "at", "expiresAt",
    ]

    /// `json` with every integer under an instant field written as RFC 3339; anything that is
    /// not JSON is returned as it is (it is stored data, never worth failing a read over).
    package static func presenting(_ json: [UInt8]) -> [UInt8] {
        guard let value = try? JSONValue.parse(json) else { return json }
        var writer = JSONWriter(capacity: json.count + 64)
        writer.value(rewritten(value), sortedKeys: true)
        return writer.bytes
    }

    package static func rewritten(_ value: JSONValue, key: String? = nil) -> JSONValue {
        switch value {
        case .number(let lexeme):
            guard let key, instantFields.contains(key), let millis = Int64(lexeme) else { return value }
            return .string(RFC3339.format(millis))
        case .array(let items):
            return .array(items.map { rewritten($0) })
        case .object(let members):
            var result: [String: JSONValue] = [:]
            for (name, member) in members { result[name] = rewritten(member, key: name) }
            return .object(result)
        default:
            return value
        }
    }
}
