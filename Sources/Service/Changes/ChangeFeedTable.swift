import EventStore
import JSON
import Ledger

/// The one owner of `changes.feed`'s SQL (migration 0026): the writes of every path that emits
/// changes (ingest, debits, the clock, replays) and the horizon reads of the pull feed and of
/// webhook delivery.
enum ChangeFeedTable {
    /// Inserts `changes` in order (their seqs follow it), recorded at `recordedAt`; nil for none.
    static func insert(_ changes: [NewChange], recordedAt: Int64) -> Query? {
        guard let first = changes.first else { return nil }
        if changes.count == 1 {
            // A plain VALUES row: its plan is cached, where unnest over arrays is planned anew.
            let d = first.draft
            return """
                INSERT INTO changes.feed (type, user_id, environment, occurred_at, recorded_at, product_id,
                    original_transaction_id, transaction_id, entitlement_ids, details, customer)
                VALUES (\(d.type.rawValue), \(first.userId), \(d.environment), \(d.occurredAt), \(recordedAt),
                    \(d.productId), \(d.originalTransactionId), \(d.transactionId), \(array: d.entitlementIds)::text[],
                    \(first.detailsJSON), \(first.customer))
                """
        }
        let drafts = changes.map(\.draft)
        return """
            INSERT INTO changes.feed (type, user_id, environment, occurred_at, recorded_at, product_id,
                original_transaction_id, transaction_id, entitlement_ids, details, customer)
            SELECT t, u, e, o, \(recordedAt)::bigint, p, ot, ti, en::text[], d, c
            FROM unnest(\(array: drafts.map(\.type.rawValue))::text[], \(array: changes.map(\.userId))::text[],
                \(array: drafts.map(\.environment))::text[], \(array: drafts.map(\.occurredAt))::bigint[],
                \(array: drafts.map(\.productId))::text[], \(array: drafts.map(\.originalTransactionId))::text[],
                \(array: drafts.map(\.transactionId))::text[],
                \(array: drafts.map { PostgresArray.literal($0.entitlementIds) })::text[],
                \(array: changes.map(\.detailsJSON))::text[], \(array: changes.map(\.customer))::text[])
                WITH ORDINALITY AS x(t, u, e, o, p, ot, ti, en, d, c, n)
            ORDER BY n
            """
    }

    /// The columns `decode` reads, in its order. `tx::text` must not keep the name `tx`: ORDER BY
    /// takes a bare name for an output column first, and would sort the transaction ids as text
    /// ("1003" before "960", so a page past a power of ten came out of order).
    private static let columns: StaticString = """
        seq, tx::text AS tx_text, type, user_id, environment, occurred_at, recorded_at, product_id, original_transaction_id,
        transaction_id, array_to_json(entitlement_ids)::text, details, customer
        """

    /// Up to `limit` changes after `cursor` (of `userId` and its aliases only, when given), oldest first, among
    /// those every older transaction has finished writing: a change that commits late can never
    /// be passed over (the xid horizon, as the log's readers use).
    ///
    /// For one user, two index walks in (tx, seq) order, each stopping at `limit`: the user's own
    /// (as before aliases existed), and its aliases' (api.md §7; none: one index probe). A single
    /// `user_id = ANY(...)` would read and sort every change of the user past the cursor.
    static func page(after cursor: FeedCursor, limit: Int, userId: String?) -> Query {
        if let userId {
            return """
                SELECT \(unescaped: columns) FROM changes.feed WHERE seq = ANY(ARRAY(
                    (SELECT seq FROM changes.feed
                     WHERE user_id = \(userId) AND (tx, seq) > (\(cursor.tx)::text::xid8, \(cursor.seq)::bigint)
                         AND tx < pg_snapshot_xmin(pg_current_snapshot())
                     ORDER BY tx, seq LIMIT \(limit))
                    UNION ALL
                    (SELECT seq FROM changes.feed
                     WHERE user_id IN (SELECT alias FROM proj.user_aliases WHERE user_id = \(userId))
                         AND (tx, seq) > (\(cursor.tx)::text::xid8, \(cursor.seq)::bigint)
                         AND tx < pg_snapshot_xmin(pg_current_snapshot())
                     ORDER BY tx, seq LIMIT \(limit))))
                ORDER BY tx, seq LIMIT \(limit)
                """
        }
        return """
            SELECT \(unescaped: columns) FROM changes.feed
            WHERE (tx, seq) > (\(cursor.tx)::text::xid8, \(cursor.seq)::bigint)
                AND tx < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY tx, seq LIMIT \(limit)
            """
    }

    /// The changes with these seqs (an admin's redelivery), in feed order.
    static func changes(seqs: [Int64]) -> Query {
        "SELECT \(unescaped: columns) FROM changes.feed WHERE seq = ANY(\(array: seqs)::bigint[]) ORDER BY tx, seq"
    }

    /// The newest change readers can see (one row, or none on an empty feed).
    static let head: Query = """
        SELECT seq, tx::text AS tx_text FROM changes.feed WHERE tx < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY tx DESC, seq DESC LIMIT 1
        """

    /// The cursor `head` answered, or `.start` for an empty feed.
    static func cursor(fromHead rows: Rows) -> FeedCursor {
        guard rows.count == 1, let seq = rows[0, 0].flatMap({ Int64($0) }), let tx = rows[0, 1].flatMap({ UInt64($0) })
        else { return .start }
        return FeedCursor(tx: tx, seq: seq)
    }

    /// Counts per type, for `iap_changes_total` at start-up.
    static let countsByType: Query = "SELECT type, count(*) FROM changes.feed GROUP BY type"

    static func decode(_ rows: Rows) -> [StoredChange] {
        (0..<rows.count).compactMap { row in
            guard let seq = rows[row, 0].flatMap({ Int64($0) }), let tx = rows[row, 1].flatMap({ UInt64($0) }),
                let type = rows[row, 2], let occurredAt = rows[row, 5].flatMap({ Int64($0) }),
                let recordedAt = rows[row, 6].flatMap({ Int64($0) }), let details = rows[row, 11],
                let customer = rows[row, 12]
            else { return nil }
            var entitlements: [String] = []
            if let text = rows[row, 10], case .array(let items)? = try? JSONValue.parse(text) {
                entitlements = items.compactMap(\.stringValue)
            }
            return StoredChange(
                seq: seq, tx: tx, type: type, userId: rows[row, 3], environment: rows[row, 4], occurredAt: occurredAt,
                recordedAt: recordedAt, productId: rows[row, 7], originalTransactionId: rows[row, 8],
                transactionId: rows[row, 9], entitlementIds: entitlements, details: details, customer: customer)
        }
    }
}
