import EventStore
import Foundation
import JSON
import TestSupport
import Testing

@testable import Infrastructure
@testable import Service

/// What ChangeFeedSealingTests read the feed and the tables with.
extension ChangeFeedSealingTests {
    func signed(_ transactionId: String, product: String, type: String, _ extra: [String: JSONValue] = [:], now: Int64)
        -> String
    {
        Mint.signed(
            Mint.transaction(
                transactionId, product: product, type: type, purchase: now - day, expires: nil, signed: now - day, extra
            ))
    }

    /// Every text column of the feed and of the deliveries, as PostgreSQL prints them.
    func storedText(_ service: TestService) throws -> String {
        let rows = try Connection(service.conninfo).query(
            """
            SELECT coalesce(string_agg(concat_ws(' ', type, user_id, environment, product_id, original_transaction_id,
                transaction_id, entitlement_ids::text, details, customer), E'\\n'), '') FROM changes.feed
            UNION ALL SELECT coalesce(string_agg(concat_ws(' ', user_id, last_error), E'\\n'), '') FROM webhooks.deliveries
            """)
        return (0..<rows.count).map { rows[$0, 0] ?? "" }.joined(separator: "\n")
    }

    /// Waits until every row of the feed is below the xid horizon (a transaction of a test
    /// running alongside holds it back for a moment): readers see what was written.
    func settle(_ service: TestService) throws {
        let connection = try Connection(service.conninfo)
        try eventually(
            "every feed row to be below the xid horizon",
            within: 60
        ) {
            let rows = try? connection.query(
                "SELECT coalesce(bool_and(tx < pg_snapshot_xmin(pg_current_snapshot())), true) FROM changes.feed")
            return rows?[0, 0] == "t"
        }
    }

    /// Every change after `after`, page by page (`limit` each), with the raw page texts.
    func pull(_ api: ServiceHTTPClient, after: String? = nil, limit: Int = 1000, userId: String? = nil) throws
        -> (changes: [JSONValue], texts: [String], next: String?)
    {
        var changes: [JSONValue] = []
        var texts: [String] = []
        var cursor = after
        for _ in 0..<1000 {
            var target = "/v1/changes?limit=\(limit)"
            if let cursor { target += "&after=\(cursor)" }
            if let userId { target += "&userId=\(userId)" }
            let page = try api.get(target)
            #expect(page.status == 200, "\(page.text)")
            texts.append(page.text)
            changes += page.json["changes"]?.arrayValue ?? []
            let next = page.json["next"]?.stringValue
            if next == cursor { break }
            cursor = next
        }
        return (changes, texts, cursor)
    }
}
