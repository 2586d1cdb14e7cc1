import EventStore
import HTTP
import JSON

/// `GET /v1/admin/catalog/unconfigured` (admin, api.md §1): every product that was bought but is
/// missing from the catalog in force, with when it was first and last recorded, how many of its
/// transactions there are and how many users own them. Read from the analytics projection (its
/// `transactions` and `chain_owners`), never from this process's memory, so every instance
/// answers the same and a restart forgets nothing; the projection follows the log within a
/// moment (its catch-up runs every 250 ms). The one reader of this SQL.
package enum UnconfiguredProducts {
    package struct Entry: Sendable, Equatable {
        package var bundleId: String
        package var productId: String
        package var firstSeen: Int64
        package var lastSeen: Int64
        package var transactions: Int64
        package var users: Int64
    }

    /// Products not among `configured` (the catalog in force's ids), by app, oldest first.
    /// `users` counts the distinct owners of their chains (an unclaimed chain has none).
    package static func query(configured: [String]) -> Query {
        """
        SELECT t.bundle_id, t.product_id,
            (extract(epoch FROM min(t.first_recorded_at)) * 1000)::bigint,
            (extract(epoch FROM max(t.last_recorded_at)) * 1000)::bigint,
            count(*), count(DISTINCT o.user_id)
        FROM analytics.transactions t
        LEFT JOIN analytics.chain_owners o ON o.original_transaction_id = t.original_transaction_id
        WHERE NOT (t.product_id = ANY(\(array: configured)::text[]))
        GROUP BY t.bundle_id, t.product_id
        ORDER BY min(t.first_recorded_at), t.bundle_id, t.product_id
        """
    }

    package static func decode(_ rows: Rows) -> [Entry] {
        (0..<rows.count).compactMap { row in
            guard let bundleId = rows[row, 0], let productId = rows[row, 1],
                let first = rows[row, 2].flatMap({ Int64($0) }), let last = rows[row, 3].flatMap({ Int64($0) }),
                let transactions = rows[row, 4].flatMap({ Int64($0) }), let users = rows[row, 5].flatMap({ Int64($0) })
            else { return nil }
            return Entry(
                bundleId: bundleId, productId: productId, firstSeen: first, lastSeen: last, transactions: transactions,
                users: users)
        }
    }

    /// `{"products": [{"bundleId", "productId", "firstSeen", "lastSeen", "transactions", "users"}], "catalogVersion"}`.
    package static func json(_ entries: [Entry], catalogVersion: Int64) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + entries.count * 160)
        writer.beginObject()
        writer.key("products")
        writer.beginArray()
        for entry in entries {
            writer.beginObject()
            writer.key("bundleId")
            writer.string(entry.bundleId)
            writer.key("productId")
            writer.string(entry.productId)
            writer.key("firstSeen")
            writer.string(RFC3339.format(entry.firstSeen))
            writer.key("lastSeen")
            writer.string(RFC3339.format(entry.lastSeen))
            writer.key("transactions")
            writer.int(entry.transactions)
            writer.key("users")
            writer.int(entry.users)
            writer.endObject()
        }
        writer.endArray()
        writer.key("catalogVersion")
        writer.int(catalogVersion)
        writer.endObject()
        return writer.bytes
    }
}
