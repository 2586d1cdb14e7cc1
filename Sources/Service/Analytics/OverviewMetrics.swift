import EventStore
import JSON

/// `GET /v1/admin/metrics/overview` (api.md §6, §3.1): the console's charts, read from the
/// analytics projection (docs/analytics.md) in one statement. The one reader of this SQL.
///
/// Every figure is of one store environment (`environment`, Production by default): a Sandbox
/// test purchase never adds to Production's numbers.
///
/// Per bucket (UTC `day`, ISO `week` from Monday, or calendar `month`, starting at `t`), judged at
/// the bucket's end `e` (or `to`, for the last one):
/// - `activeSubscriptions`: auto-renewable chains with a period covering `e` (bought before it,
///   ending at or after it, neither upgraded away nor revoked before it) — `daily_metrics`' rule;
/// - `mrr`: per currency, in milliunits, for every chain with a paid period covering `e` (grace
///   period counts: a period runs on to the grace end of a renewal info signed after it began;
///   not revoked, not a free trial — price 0, or offer type 1 with FREE_TRIAL —, and billing
///   retry covers nothing) that period's price normalised to a month by its billing period:
///   `analytics.billing_period` (the catalog's `period`, else the period's length snapped to the
///   nearest standard one, Sandbox by Apple's accelerated table) times
///   `analytics.billing_periods.monthly_factor` (30.436875 / 7 for P1W … 1/12 for P1Y). Never the
///   raw length scaled to a month: a 5-minute Sandbox month so scaled counted 8,766 times its price;
/// - `new`: first purchases of auto-renewable chains in the bucket;
/// - `churned`: chains now `expired` (not in grace or billing retry) whose last period ended in it;
/// - `refunded`: transactions of any type refunded or revoked in it (family revocations aside);
/// - `revenue`, `refunds`, `proceeds`: per currency, in milliunits, from `analytics.revenue_movements`
///   that happened in the bucket: the charges, the refunds (positive; a reversal subtracts), and
///   the estimated proceeds of both (net of refunds, after Apple's commission);
/// - `trialsStarted`, `trialsConverted`: chains whose free trial began in the bucket, and chains
///   whose first paid period after a free trial began in it (`analytics.subscription_lifecycles`).
/// Counts outside [from, to) are left out of the first and last bucket.
enum OverviewMetrics {
    enum Interval: String, CaseIterable, Sendable { case day, week, month }

    /// At most this many buckets in one answer (a year by day, ten years by week…).
    static let maxBuckets = 400

    struct Bucket: Sendable, Equatable {
        var start: Int64
        var active: Int64
        var new: Int64
        var churned: Int64
        var refunded: Int64
        var mrr: [String: Int64]
        var revenue: [String: Int64] = [:]
        var refunds: [String: Int64] = [:]
        var proceeds: [String: Int64] = [:]
        var trialsStarted: Int64 = 0
        var trialsConverted: Int64 = 0
    }

    static func query(from: Int64, to: Int64, interval: Interval, environment: String) -> Query {
        """
        WITH bounds AS (
            SELECT analytics.ms(\(from)) AS f, analytics.ms(\(to)) AS t, ('1 ' || \(interval.rawValue))::interval AS step
        ), buckets AS (
            SELECT b AS s, least(b + bounds.step, bounds.t) AS e, greatest(b, bounds.f) AS lo
            FROM bounds, generate_series(date_trunc(\(interval.rawValue), bounds.f, 'UTC'), bounds.t - interval '1 millisecond', bounds.step) AS b
        ), moves AS (
            SELECT m.at, m.kind, m.currency, m.amount_milli, m.proceeds_milli
            FROM analytics.revenue_movements m, bounds
            WHERE m.environment = \(environment)::text AND m.at >= bounds.f AND m.at < bounds.t
        ), lives AS (
            SELECT l.trial_started_at, l.converted, l.first_paid_at
            FROM analytics.subscription_lifecycles l
            WHERE l.environment = \(environment)::text AND (l.trial_started_at IS NOT NULL OR l.converted)
        ), periods AS (
            SELECT x.original_transaction_id, x.purchase_date, x.price_milli, x.currency,
                least(x.expires_date, coalesce(x.revocation_date, 'infinity')) AS ends,
                CASE WHEN x.revocation_date IS NULL AND r.signed_date >= x.purchase_date
                    THEN greatest(x.expires_date, r.grace_period_expires_date)
                    ELSE least(x.expires_date, coalesce(x.revocation_date, 'infinity'))
                END AS paid_until,
                analytics.is_free_trial(x.price_milli, x.offer_type, x.offer_discount_type) AS free,
                analytics.billing_period(x.product_id, x.environment, extract(epoch FROM x.expires_date - x.purchase_date)) AS period
            FROM analytics.transactions x
            CROSS JOIN bounds
            LEFT JOIN analytics.renewal_infos r ON r.original_transaction_id = x.original_transaction_id
            WHERE x.type = 'Auto-Renewable Subscription' AND NOT x.is_upgraded AND x.expires_date IS NOT NULL
              AND x.purchase_date < bounds.t AND x.environment = \(environment)::text
              AND greatest(x.expires_date, r.grace_period_expires_date) >= (SELECT min(e) FROM buckets)
        )
        SELECT (extract(epoch FROM b.s) * 1000)::bigint,
            (SELECT count(DISTINCT p.original_transaction_id) FROM periods p WHERE p.purchase_date < b.e AND p.ends >= b.e),
            (SELECT count(*) FROM analytics.transactions n
             WHERE n.type = 'Auto-Renewable Subscription' AND n.transaction_id = n.original_transaction_id
               AND n.purchase_date >= b.lo AND n.purchase_date < b.e AND n.environment = \(environment)::text),
            (SELECT count(*) FROM analytics.subscriptions c
             WHERE c.status = 'expired' AND c.expires_date >= b.lo AND c.expires_date < b.e
               AND c.environment = \(environment)::text),
            (SELECT count(*) FROM analytics.transactions r
             WHERE r.revocation_date >= b.lo AND r.revocation_date < b.e
               AND r.revocation_type IS DISTINCT FROM 'FAMILY_REVOKE' AND r.environment = \(environment)::text),
            (SELECT coalesce(jsonb_object_agg(m.currency, m.milli), '{}'::jsonb)::text FROM (
                SELECT c.currency, round(sum(c.price_milli * bp.monthly_factor))::bigint AS milli
                FROM (SELECT DISTINCT ON (p.original_transaction_id) p.*
                      FROM periods p WHERE p.purchase_date < b.e AND p.paid_until >= b.e
                      ORDER BY p.original_transaction_id, p.purchase_date DESC) c
                JOIN analytics.billing_periods bp ON bp.period = c.period
                WHERE c.price_milli IS NOT NULL AND c.currency IS NOT NULL AND NOT c.free
                GROUP BY c.currency) m),
            (SELECT coalesce(jsonb_object_agg(x.currency, x.revenue), '{}')::text || chr(31)
                || coalesce(jsonb_object_agg(x.currency, x.refunds), '{}')::text || chr(31)
                || coalesce(jsonb_object_agg(x.currency, x.proceeds), '{}')::text
             FROM (SELECT v.currency,
                       coalesce(sum(v.amount_milli) FILTER (WHERE v.kind = 'charge'), 0) AS revenue,
                       coalesce(-sum(v.amount_milli) FILTER (WHERE v.kind = 'refund'), 0) AS refunds,
                       sum(v.proceeds_milli) AS proceeds
                   FROM moves v WHERE v.at >= b.lo AND v.at < b.e GROUP BY v.currency) x),
            (SELECT count(*) FROM lives l WHERE l.trial_started_at >= b.lo AND l.trial_started_at < b.e),
            (SELECT count(*) FROM lives l WHERE l.converted AND l.first_paid_at >= b.lo AND l.first_paid_at < b.e)
        FROM buckets b
        ORDER BY b.s
        """
    }

    static func decode(_ rows: Rows) -> [Bucket] {
        (0..<rows.count).compactMap { row in
            guard let start = rows[row, 0].flatMap({ Int64($0) }), let active = rows[row, 1].flatMap({ Int64($0) }),
                let new = rows[row, 2].flatMap({ Int64($0) }), let churned = rows[row, 3].flatMap({ Int64($0) }),
                let refunded = rows[row, 4].flatMap({ Int64($0) }),
                let mrrText = rows[row, 5], let mrr = try? JSONValue.parse(Array(mrrText.utf8)).objectValue
            else { return nil }
            // revenue, refunds and proceeds in one column, separated by U+001F (never in JSON text).
            let money = (rows[row, 6] ?? "").split(separator: "\u{1F}", omittingEmptySubsequences: false).map {
                (try? JSONValue.parse(Array($0.utf8)).objectValue)?.compactMapValues(\.int64Value) ?? [:]
            }
            guard money.count == 3, let started = rows[row, 7].flatMap({ Int64($0) }),
                let converted = rows[row, 8].flatMap({ Int64($0) })
            else { return nil }
            return Bucket(
                start: start, active: active, new: new, churned: churned, refunded: refunded,
                mrr: mrr.compactMapValues(\.int64Value), revenue: money[0], refunds: money[1], proceeds: money[2],
                trialsStarted: started, trialsConverted: converted)
        }
    }

    /// How many buckets [from, to) spans (to refuse a range too long before querying).
    static func bucketCount(from: Int64, to: Int64, interval: Interval) -> Int64 {
        let span = max(0, to - from)
        switch interval {
        case .day: return span / 86_400_000 + 2
        case .week: return span / (7 * 86_400_000) + 2
        case .month: return span / (28 * 86_400_000) + 2
        }
    }

    /// The answer: `{"from", "to", "interval", "environment", "series": {…}}`.
    static func json(
        _ buckets: [Bucket], from: Int64, to: Int64, interval: Interval, environment: String
    ) -> [UInt8] {
        var w = JSONWriter(capacity: 256 + buckets.count * 200)
        func series(_ name: String, _ value: (Bucket) -> Int64) {
            w.key(name)
            w.beginArray()
            for bucket in buckets {
                w.beginObject()
                w.key("t"); w.string(RFC3339.format(bucket.start))
                w.key("value"); w.int(value(bucket))
                w.endObject()
            }
            w.endArray()
        }
        w.beginObject()
        w.key("from"); w.string(RFC3339.format(from))
        w.key("to"); w.string(RFC3339.format(to))
        w.key("interval"); w.string(interval.rawValue)
        w.key("environment"); w.string(environment)
        w.key("series")
        w.beginObject()
        series("activeSubscriptions") { $0.active }
        func byCurrency(_ name: String, _ values: (Bucket) -> [String: Int64]) {
            w.key(name)
            w.beginObject()
            for currency in Set(buckets.flatMap { values($0).keys }).sorted() {
                series(currency) { values($0)[currency] ?? 0 }
            }
            w.endObject()
        }
        byCurrency("mrr") { $0.mrr }
        series("new") { $0.new }
        series("churned") { $0.churned }
        series("refunded") { $0.refunded }
        byCurrency("revenue") { $0.revenue }
        byCurrency("refunds") { $0.refunds }
        byCurrency("proceeds") { $0.proceeds }
        series("trialsStarted") { $0.trialsStarted }
        series("trialsConverted") { $0.trialsConverted }
        w.endObject()
        w.endObject()
        return w.bytes
    }
}
