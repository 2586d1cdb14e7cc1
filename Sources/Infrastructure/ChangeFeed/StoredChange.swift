import JSON

/// One change as the feed stores it, and its JSON (api.md §4): the same bytes in the pull feed
/// and in every webhook attempt.
package struct StoredChange: Sendable, Hashable {
    package var seq: Int64
    package var tx: UInt64
    package var type: String
    package var userId: String?
    /// The feed row's `user_id` as stored: the owner's subject (ChangeSealing), or the id of a
    /// row in clear. What webhook deliveries order a user's changes by; never served.
    package var subject: String?
    package var environment: String?
    package var occurredAt: Int64
    package var recordedAt: Int64
    package var productId: String?
    package var originalTransactionId: String?
    package var transactionId: String?
    package var entitlementIds: [String]
    /// A JSON object, as stored.
    package var details: String
    /// The Customer document after the change, as stored.
    package var customer: String

    package var cursor: FeedCursor { FeedCursor(tx: tx, seq: seq) }

    /// `chg_` and the seq on 15 digits: the same on every read and every webhook attempt
    /// (Standard Webhooks' `webhook-id`, which receivers dedupe on).
    package var id: String { Self.id(seq: seq) }

    package static func id(seq: Int64) -> String {
        let digits = String(seq)
        return "chg_" + String(repeating: "0", count: max(0, 15 - digits.count)) + digits
    }

    /// The seq a change id names; nil when `text` is not one.
    package static func seq(ofId text: String) -> Int64? {
        guard text.hasPrefix("chg_") else { return nil }
        let digits = text.dropFirst(4)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int64(digits)
    }

    package func jsonBytes() -> [UInt8] {
        var w = JSONWriter(capacity: 512 + customer.utf8.count + details.utf8.count)
        write(to: &w)
        return w.bytes
    }

    package func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("id")
        w.string(id)
        w.key("cursor")
        w.string(cursor.description)
        w.key("type")
        w.string(type)
        w.key("userId")
        w.stringOrNull(userId)
        w.key("environment")
        w.stringOrNull(environment)
        w.key("occurredAt")
        w.string(RFC3339.format(occurredAt))
        w.key("recordedAt")
        w.string(RFC3339.format(recordedAt))
        w.key("productId")
        w.stringOrNull(productId)
        w.key("originalTransactionId")
        w.stringOrNull(originalTransactionId)
        w.key("transactionId")
        w.stringOrNull(transactionId)
        w.key("entitlementIds")
        w.beginArray()
        for id in entitlementIds { w.string(id) }
        w.endArray()
        w.key("details")
        w.raw(details.utf8)
        w.key("customer")
        w.raw(customer.utf8)
        w.endObject()
    }
}
