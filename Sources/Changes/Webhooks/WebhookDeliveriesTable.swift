import EventStore
import Infrastructure

/// The one owner of the `webhooks` schema's SQL (migration 0027): endpoint cursors, deliveries
/// and the append-only attempts log. Bound parameters only.
package enum WebhookDeliveriesTable {
    /// Where `endpoint` stands in the feed, or nil before its first run.
    package static func cursor(endpoint: String) -> Query {
        "SELECT tx::text, seq FROM webhooks.cursors WHERE endpoint = \(endpoint)"
    }

    package static func cursor(from rows: Rows) -> FeedCursor? {
        guard rows.count == 1, let tx = rows[0, 0].flatMap({ UInt64($0) }), let seq = rows[0, 1].flatMap({ Int64($0) })
        else { return nil }
        return FeedCursor(tx: tx, seq: seq)
    }

    /// A new endpoint's cursor (the feed's head when it first runs); a row already there stays.
    package static func startCursor(endpoint: String, at cursor: FeedCursor, now: Int64) -> Query {
        """
        INSERT INTO webhooks.cursors (endpoint, tx, seq, started_at)
        VALUES (\(endpoint), \(String(cursor.tx))::xid8, \(cursor.seq), \(now))
        ON CONFLICT (endpoint) DO NOTHING
        """
    }

    package static func advanceCursor(endpoint: String, to cursor: FeedCursor) -> Query {
        "UPDATE webhooks.cursors SET tx = \(String(cursor.tx))::xid8, seq = \(cursor.seq) WHERE endpoint = \(endpoint)"
    }

    /// New pending deliveries of `changes` (due at `now`); one already there stays as it is.
    /// `user_id` is the change's subject as the feed stores it (per-user order needs no id).
    package static func create(endpoint: String, changes: [StoredChange], now: Int64) -> Query? {
        guard !changes.isEmpty else { return nil }
        return """
            INSERT INTO webhooks.deliveries (endpoint, seq, tx, user_id, status, next_attempt_at, queued_at, updated_at)
            SELECT \(endpoint), s, t::xid8, u, 'pending', \(now)::bigint, \(now)::bigint, \(now)::bigint
            FROM unnest(\(array: changes.map(\.seq))::bigint[], \(array: changes.map { String($0.tx) })::text[],
                \(array: changes.map(\.subject))::text[]) AS x(s, t, u)
            ON CONFLICT (endpoint, seq) DO NOTHING
            """
    }

    /// `tx_text`, not `tx`: ORDER BY would sort an output column named `tx` as text (ChangeFeedTable).
    package static let openColumns: StaticString = "seq, tx::text AS tx_text, user_id, failures, next_attempt_at"

    /// Up to `limit` open (pending or failed) deliveries of `endpoint` after `cursor`, in cursor order.
    package static func open(endpoint: String, after cursor: FeedCursor, limit: Int) -> Query {
        """
        SELECT \(unescaped: openColumns) FROM webhooks.deliveries
        WHERE endpoint = \(endpoint) AND status IN ('pending', 'failed')
            AND (tx, seq) > (\(String(cursor.tx))::xid8, \(cursor.seq)::bigint)
        ORDER BY tx, seq LIMIT \(limit)
        """
    }

    package static func decodeOpen(_ rows: Rows) -> [WebhookPlanner.Open] {
        (0..<rows.count).compactMap { row in
            guard let seq = rows[row, 0].flatMap({ Int64($0) }), let tx = rows[row, 1].flatMap({ UInt64($0) }),
                let failures = rows[row, 3].flatMap({ Int($0) }), let next = rows[row, 4].flatMap({ Int64($0) })
            else { return nil }
            return .init(
                seq: seq, cursor: FeedCursor(tx: tx, seq: seq), userId: rows[row, 2], failures: failures,
                nextAttemptAt: next)
        }
    }

    /// Writes finished attempts: each delivery's new state, and one attempts row each. Only a
    /// delivery still open changes (an admin's redeliver meanwhile is not undone by a late
    /// outcome of an older send: it is queued again either way). The deliveries are found by
    /// their seqs in the primary key. "Open" is spelled as neither delivered nor dead (the same,
    /// by the table's CHECK) so that no plan takes the open deliveries' partial index and reads
    /// every open delivery of the endpoint to find them: a down endpoint's backlog can be large
    /// (FreshDatabasePlanTests).
    ///
    /// Delivered ones (nearly all) are one UPDATE per answer status, with nothing per row but the
    /// seq: joined with the per-row arrays, the generic plan (ten rows guessed on each side) was a
    /// nested loop testing every pair, 9,900 rejected pairs for a round of 100 (3.6 ms, against
    /// 1.6 ms for the hash join over every open delivery it replaced). Their failures and next
    /// attempt time are left as they are: nothing reads them once delivered.
    package static func record(endpoint: String, _ updates: [WebhookPlanner.Update], now: Int64) -> [Query] {
        guard !updates.isEmpty else { return [] }
        var queries: [Query] = []
        var delivered: [Int: [Int64]] = [:]
        var others: [WebhookPlanner.Update] = []
        for update in updates {
            if update.status == .delivered, update.error == nil, let status = update.httpStatus {
                delivered[status, default: []].append(update.seq)
            } else {
                others.append(update)
            }
        }
        for (status, seqs) in delivered.sorted(by: { $0.key < $1.key }) {
            queries.append(
                """
                UPDATE webhooks.deliveries SET status = 'delivered', attempts = attempts + 1, last_status = \(status),
                    last_error = NULL, updated_at = \(now)::bigint, delivered_at = \(now)::bigint
                WHERE endpoint = \(endpoint) AND seq = ANY(\(array: seqs)::bigint[])
                    AND status <> 'delivered' AND status <> 'dead'
                """)
        }
        if !others.isEmpty {
            let seqs = others.map(\.seq)
            queries.append(
                """
                UPDATE webhooks.deliveries d SET status = x.st, failures = x.f, next_attempt_at = x.n,
                    attempts = d.attempts + 1, last_status = x.hs, last_error = x.e, updated_at = \(now)::bigint,
                    delivered_at = CASE WHEN x.st = 'delivered' THEN \(now)::bigint ELSE d.delivered_at END
                FROM unnest(\(array: seqs)::bigint[], \(array: others.map(\.status.rawValue))::text[],
                    \(array: others.map(\.failures))::integer[], \(array: others.map(\.nextAttemptAt))::bigint[],
                    \(array: others.map(\.httpStatus))::integer[], \(array: others.map(\.error))::text[])
                    AS x(s, st, f, n, hs, e)
                WHERE d.endpoint = \(endpoint) AND d.seq = ANY(\(array: seqs)::bigint[]) AND d.seq = x.s
                    AND d.status <> 'delivered' AND d.status <> 'dead'
                """)
        }
        queries.append(
            """
            INSERT INTO webhooks.attempts (endpoint, seq, attempted_at, http_status, error, duration_ms)
            SELECT \(endpoint), s, a, hs, e, du
            FROM unnest(\(array: updates.map(\.seq))::bigint[], \(array: updates.map(\.attemptedAt))::bigint[],
                \(array: updates.map(\.httpStatus))::integer[], \(array: updates.map(\.error))::text[],
                \(array: updates.map(\.durationMs))::integer[]) AS x(s, a, hs, e, du)
            """)
        return queries
    }

    /// Per endpoint: the count of each status and the oldest open delivery's queue time.
    package static let summary: Query = """
        SELECT endpoint, status, count(*), min(queued_at) FROM webhooks.deliveries GROUP BY endpoint, status
        """

    /// Per endpoint, only its open deliveries (pending or failed): their count and the oldest one's
    /// queue time, what the metrics gauges report. Read through the open deliveries' partial
    /// index, so a scrape costs the backlog; `summary` counts every delivery ever made (the table
    /// keeps them all), a full scan that grew with the history on every scrape.
    package static let openSummary: Query = """
        SELECT endpoint, status, count(*), min(queued_at) FROM webhooks.deliveries
        WHERE status IN ('pending', 'failed') GROUP BY endpoint, status
        """

    package struct Summary: Sendable, Equatable {
        package var counts: [String: Int64] = ["pending": 0, "delivered": 0, "failed": 0, "dead": 0]
        /// The queue time of the oldest pending or failed delivery.
        package var oldestOpenQueuedAt: Int64?
        package var open: Int64 { (counts["pending"] ?? 0) + (counts["failed"] ?? 0) }
    }

    package static func decodeSummary(_ rows: Rows) -> [String: Summary] {
        var out: [String: Summary] = [:]
        for row in 0..<rows.count {
            guard let endpoint = rows[row, 0], let status = rows[row, 1],
                let count = rows[row, 2].flatMap({ Int64($0) })
            else { continue }
            var summary = out[endpoint] ?? Summary()
            summary.counts[status] = count
            if status == "pending" || status == "failed", let queued = rows[row, 3].flatMap({ Int64($0) }) {
                summary.oldestOpenQueuedAt = min(summary.oldestOpenQueuedAt ?? queued, queued)
            }
            out[endpoint] = summary
        }
        return out
    }

    /// Ends open deliveries whose change is not served any more (its person was erased): dead,
    /// never sent, no attempt recorded; a dead delivery blocks none of the user's later ones.
    /// Open is spelled as in `record`, for the same reason.
    package static func skip(endpoint: String, seqs: [Int64], now: Int64) -> Query {
        """
        UPDATE webhooks.deliveries SET status = 'dead', last_error = 'not sent: the change is not served (erased)',
            updated_at = \(now)
        WHERE endpoint = \(endpoint) AND seq = ANY(\(array: seqs)::bigint[]) AND status <> 'delivered'
            AND status <> 'dead'
        """
    }

    /// A delivery as the admin API shows it (`userId`: the user id, as the feed serves it).
    package struct Listed: Sendable {
        package var seq: Int64
        package var userId: String?
        package var status: String
        package var attempts: Int
        package var nextAttemptAt: Int64
        package var queuedAt: Int64
        package var deliveredAt: Int64?
        package var lastStatus: Int?
        package var lastError: String?
    }

    /// Up to `limit` deliveries of `endpoint` (of `status`, when given), newest first.
    package static func list(endpoint: String, status: String?, limit: Int) -> Query {
        """
        SELECT seq, identity.user_of(user_id), status, attempts, next_attempt_at, queued_at, delivered_at,
            last_status, last_error
        FROM webhooks.deliveries
        WHERE endpoint = \(endpoint) AND (\(status)::text IS NULL OR status = \(status)::text)
        ORDER BY seq DESC LIMIT \(limit)
        """
    }

    package static func decodeList(_ rows: Rows) -> [Listed] {
        (0..<rows.count).compactMap { row in
            guard let seq = rows[row, 0].flatMap({ Int64($0) }), let status = rows[row, 2],
                let attempts = rows[row, 3].flatMap({ Int($0) }), let next = rows[row, 4].flatMap({ Int64($0) }),
                let queued = rows[row, 5].flatMap({ Int64($0) })
            else { return nil }
            return Listed(
                seq: seq, userId: rows[row, 1], status: status, attempts: attempts, nextAttemptAt: next,
                queuedAt: queued, deliveredAt: rows[row, 6].flatMap({ Int64($0) }),
                lastStatus: rows[row, 7].flatMap({ Int($0) }), lastError: rows[row, 8])
        }
    }

    package struct Attempt: Sendable, Equatable {
        package var seq: Int64
        package var at: Int64
        package var httpStatus: Int?
        package var error: String?
        package var durationMs: Int
    }

    /// Every attempt at the deliveries `seqs` of `endpoint`, oldest first.
    package static func attempts(endpoint: String, seqs: [Int64]) -> Query {
        """
        SELECT seq, attempted_at, http_status, error, duration_ms FROM webhooks.attempts
        WHERE endpoint = \(endpoint) AND seq = ANY(\(array: seqs)::bigint[]) ORDER BY seq, id
        """
    }

    package static func decodeAttempts(_ rows: Rows) -> [Attempt] {
        (0..<rows.count).compactMap { row in
            guard let seq = rows[row, 0].flatMap({ Int64($0) }), let at = rows[row, 1].flatMap({ Int64($0) }),
                let duration = rows[row, 4].flatMap({ Int($0) })
            else { return nil }
            return Attempt(
                seq: seq, at: at, httpStatus: rows[row, 2].flatMap({ Int($0) }), error: rows[row, 3],
                durationMs: duration)
        }
    }

    /// Queues `changes` again for `endpoint` (creating a delivery for one it never had): pending,
    /// due now, its retry schedule from the start. Answers one row per delivery queued.
    package static func requeue(endpoint: String, changes: [StoredChange], now: Int64) -> Query {
        """
        INSERT INTO webhooks.deliveries (endpoint, seq, tx, user_id, status, next_attempt_at, queued_at, updated_at)
        SELECT \(endpoint), s, t::xid8, u, 'pending', \(now)::bigint, \(now)::bigint, \(now)::bigint
        FROM unnest(\(array: changes.map(\.seq))::bigint[], \(array: changes.map { String($0.tx) })::text[],
            \(array: changes.map(\.subject))::text[]) AS x(s, t, u)
        ON CONFLICT (endpoint, seq) DO UPDATE SET status = 'pending', failures = 0,
            next_attempt_at = EXCLUDED.next_attempt_at, queued_at = EXCLUDED.queued_at, updated_at = EXCLUDED.updated_at
        RETURNING seq
        """
    }

    /// Queues every delivery of `endpoint` in `status` again; answers one row per delivery.
    package static func requeue(endpoint: String, status: String, now: Int64) -> Query {
        """
        UPDATE webhooks.deliveries SET status = 'pending', failures = 0, next_attempt_at = \(now),
            queued_at = \(now), updated_at = \(now)
        WHERE endpoint = \(endpoint) AND status = \(status) RETURNING seq
        """
    }
}
