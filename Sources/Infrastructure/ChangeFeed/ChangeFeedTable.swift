import AppStore
import EventStore
import JSON
import Ledger

/// The one owner of `changes.feed`'s SQL (migration 0026): the writes of every path that emits
/// changes (ingest, debits, the clock, replays) and the horizon reads of the pull feed and of
/// webhook delivery.
package enum ChangeFeedTable {
    /// Inserts `rows` in order (their seqs follow it), recorded at `recordedAt`; nil for none.
    /// The rows are sealed already (ChangeSealing): this is the only INSERT of a change.
    package static func insert(_ rows: [FeedRow], recordedAt: Int64) -> Query? {
        guard let first = rows.first else { return nil }
        if rows.count == 1 {
            // A plain VALUES row: its plan is cached, where unnest over arrays is planned anew.
            let d = first.draft
            return """
                INSERT INTO changes.feed (type, user_id, environment, occurred_at, recorded_at, product_id,
                    original_transaction_id, transaction_id, entitlement_ids, details, customer)
                VALUES (\(d.type.rawValue), \(first.userId), \(d.environment), \(d.occurredAt), \(recordedAt),
                    \(d.productId), \(d.originalTransactionId), \(d.transactionId), \(array: d.entitlementIds)::text[],
                    \(first.details), \(first.customer))
                """
        }
        let drafts = rows.map(\.draft)
        return """
            INSERT INTO changes.feed (type, user_id, environment, occurred_at, recorded_at, product_id,
                original_transaction_id, transaction_id, entitlement_ids, details, customer)
            SELECT t, u, e, o, \(recordedAt)::bigint, p, ot, ti, en::text[], d, c
            FROM unnest(\(array: drafts.map(\.type.rawValue))::text[], \(array: rows.map(\.userId))::text[],
                \(array: drafts.map(\.environment))::text[], \(array: drafts.map(\.occurredAt))::bigint[],
                \(array: drafts.map(\.productId))::text[], \(array: drafts.map(\.originalTransactionId))::text[],
                \(array: drafts.map(\.transactionId))::text[],
                \(array: drafts.map { PostgresArray.literal($0.entitlementIds) })::text[],
                \(array: rows.map(\.details))::text[], \(array: rows.map(\.customer))::text[])
                WITH ORDINALITY AS x(t, u, e, o, p, ot, ti, en, d, c, n)
            ORDER BY n
            """
    }

    /// The columns `decode` reads, in its order: the row, then the identity row of its subject
    /// (ChangeSealing opens the row with its key) and whether its user is known at all (a clear
    /// row names the id itself: a legacy user, or a row from before the feed was sealed).
    /// `tx::text` must not keep the name `tx`: ORDER BY takes a bare name for an output column
    /// first, and would sort the transaction ids as text ("1003" before "960", so a page past a
    /// power of ten came out of order); the reads order by `f.tx` besides.
    /// `OFFSET 0` keeps `known`'s probe one index lookup per row. Without it PostgreSQL may turn
    /// the EXISTS into a hashed subplan, and the generic plan of a page (its LIMIT a parameter,
    /// guessed at a tenth of the feed) does: the first row that needed the probe (a row in
    /// clear, an erased person's) then hashed all of `identity.subjects`, 26 ms per page at
    /// 100,000 users and growing with them (ChangeFeedPlanTests).
    private static let columns: StaticString = """
        f.seq, f.tx::text AS tx_text, f.type, f.user_id, f.environment, f.occurred_at, f.recorded_at, f.product_id,
        f.original_transaction_id, f.transaction_id, array_to_json(f.entitlement_ids)::text, f.details, f.customer,
        s.user_id AS owner_id, encode(s.key, 'hex') AS owner_key,
        f.user_id IS NULL OR s.user_id IS NOT NULL
            OR EXISTS (SELECT 1 FROM identity.subjects u WHERE u.user_id = f.user_id OFFSET 0) AS known
        """

    /// Each row's identity row (by subject; none for an erased person's rows), one index probe per
    /// row. As a plain join, a generic plan made on a database not yet analyzed hashed every
    /// subject on each page (FreshDatabasePlanTests); `LATERAL … OFFSET 0` cannot be hashed.
    private static let identityJoin: StaticString = """
        LEFT JOIN LATERAL (SELECT s.user_id, s.key FROM identity.subjects s WHERE s.subject = f.user_id OFFSET 0) s
            ON true
        """

    /// Up to `limit` changes after `cursor` (of `userId` and its aliases only, when given), oldest
    /// first, among those every older transaction has finished writing: a change that commits late
    /// can never be passed over (the xid horizon, as the log's readers use). Rows, not yet opened:
    /// `decode` and `ChangeSealing.open` (what `ChangeFeedReads.changes` does).
    ///
    /// For one user, index walks in (tx, seq) order, each stopping at `limit`: the user's subject
    /// (sealed rows), the user id itself (rows in clear: a legacy user, rows from before the feed
    /// was sealed), and each of its aliases' ids and subjects (api.md §7; none: one index probe).
    /// A single `user_id = ANY(...)` would read and sort every change of the user past the cursor.
    /// The rows are then fetched by seq, one probe each: with `f.seq = ANY(…)` a generic plan may
    /// walk the whole feed in (tx, seq) order instead (FreshDatabasePlanTests).
    package static func page(after cursor: FeedCursor, limit: Int, userId: String?) -> Query {
        if let userId {
            return """
                SELECT \(unescaped: columns)
                FROM unnest(ARRAY(
                    (SELECT seq FROM changes.feed
                     WHERE user_id = (SELECT i.subject FROM identity.subjects i
                                      WHERE i.user_id = \(userId) AND i.subject <> i.user_id)
                         AND (tx, seq) > (\(cursor.tx)::text::xid8, \(cursor.seq)::bigint)
                         AND tx < pg_snapshot_xmin(pg_current_snapshot())
                     ORDER BY tx, seq LIMIT \(limit))
                    UNION
                    (SELECT seq FROM changes.feed
                     WHERE user_id = \(userId) AND (tx, seq) > (\(cursor.tx)::text::xid8, \(cursor.seq)::bigint)
                         AND tx < pg_snapshot_xmin(pg_current_snapshot())
                     ORDER BY tx, seq LIMIT \(limit))
                    UNION
                    (SELECT x.seq
                     FROM (SELECT a.alias FROM proj.user_aliases a WHERE a.user_id = \(userId)
                           UNION ALL
                           SELECT (SELECT i.subject FROM identity.subjects i WHERE i.user_id = a.alias OFFSET 0)
                           FROM proj.user_aliases a WHERE a.user_id = \(userId)) AS al(id)
                     CROSS JOIN LATERAL (
                         SELECT seq, tx FROM changes.feed
                         WHERE user_id = al.id AND (tx, seq) > (\(cursor.tx)::text::xid8, \(cursor.seq)::bigint)
                             AND tx < pg_snapshot_xmin(pg_current_snapshot())
                         ORDER BY tx, seq LIMIT \(limit)) x
                     ORDER BY x.tx, x.seq LIMIT \(limit)))) AS k(seq)
                JOIN LATERAL (SELECT * FROM changes.feed r WHERE r.seq = k.seq OFFSET 0) f ON true
                \(unescaped: identityJoin)
                ORDER BY f.tx, f.seq LIMIT \(limit)
                """
        }
        return """
            SELECT \(unescaped: columns) FROM changes.feed f \(unescaped: identityJoin)
            WHERE (f.tx, f.seq) > (\(cursor.tx)::text::xid8, \(cursor.seq)::bigint)
                AND f.tx < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY f.tx, f.seq LIMIT \(limit)
            """
    }

    /// The changes with these seqs (an admin's redelivery, a webhook send), in feed order.
    package static func changes(seqs: [Int64]) -> Query {
        """
        SELECT \(unescaped: columns)
        FROM (SELECT DISTINCT unnest(\(array: seqs)::bigint[])) AS k(seq)
        JOIN LATERAL (SELECT * FROM changes.feed r WHERE r.seq = k.seq OFFSET 0) f ON true
        \(unescaped: identityJoin)
        ORDER BY f.tx, f.seq
        """
    }

    /// The newest change readers can see (one row, or none on an empty feed).
    package static let head: Query = """
        SELECT seq, tx::text AS tx_text FROM changes.feed WHERE tx < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY tx DESC, seq DESC LIMIT 1
        """

    /// The cursor `head` answered, or `.start` for an empty feed.
    package static func cursor(fromHead rows: Rows) -> FeedCursor {
        guard rows.count == 1, let seq = rows[0, 0].flatMap({ Int64($0) }), let tx = rows[0, 1].flatMap({ UInt64($0) })
        else { return .start }
        return FeedCursor(tx: tx, seq: seq)
    }

    /// Counts per type, for `iap_changes_total` at start-up.
    package static let countsByType: Query = "SELECT type, count(*) FROM changes.feed GROUP BY type"

    /// The rows of `page` and `changes(seqs:)` as stored, with their identity rows.
    package static func decode(_ rows: Rows) -> [ChangeSealing.ReadRow] {
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
            let change = StoredChange(
                seq: seq, tx: tx, type: type, userId: rows[row, 3], subject: rows[row, 3], environment: rows[row, 4],
                occurredAt: occurredAt, recordedAt: recordedAt, productId: rows[row, 7],
                originalTransactionId: rows[row, 8], transactionId: rows[row, 9], entitlementIds: entitlements,
                details: details, customer: customer)
            return ChangeSealing.ReadRow(
                change: change, ownerId: rows[row, 13], key: rows[row, 14].flatMap(Hex.decode),
                known: rows[row, 15] == "t")
        }
    }

    /// `rows` opened (ChangeSealing.open), subjects named inside looked up on `connection`; and
    /// the cursor of the last row read, served or not (nil: none), where the reader goes on from.
    package static func opened(_ rows: Rows, on connection: Connection) throws(ServiceError) -> FeedPage {
        let read = decode(rows)
        let changes = try ChangeSealing.open(read) { subjects throws(ServiceError) in
            let query = SubjectsTable.existing(subjects: subjects)
            return SubjectsTable.subjects(
                from: try database { () throws(DatabaseError) in try connection.query(query.sql, query.params) })
        }
        return FeedPage(
            changes: changes, next: read.last?.change.cursor, read: read.count, seqs: read.map(\.change.seq))
    }
}

/// A page of the feed as served: the changes that may be served, and where the reader goes on
/// from (past rows that are not served: an erased person's). `read` rows were read in all.
package struct FeedPage: Sendable {
    package var changes: [StoredChange]
    package var next: FeedCursor?
    package var read: Int
    /// The seqs of every row read (served or not).
    package var seqs: [Int64]
}
