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
///   raw length scaled to a month: a 5-minute Sandbox month so scaled counted 8,766 times its price.
///   A commitment plan (`billing_plan_type` MONTHLY, a 1-year product billed monthly) counts its
///   own monthly price: P1M, whatever the catalog's period (api.md §8, migration 0045);
/// - `new`: first purchases of auto-renewable chains in the bucket;
/// - `churned`: chains now `expired` (not in grace or billing retry) whose last period ended in it;
/// - `refunded`: transactions of any type refunded or revoked in it (family revocations aside);
/// - `revenue`, `refunds`, `proceeds`: per currency, in milliunits, from `analytics.revenue_movements`
///   that happened in the bucket: the charges, the refunds (positive; a reversal subtracts), and
///   the estimated proceeds of both (net of refunds, after Apple's commission);
/// - `trialsStarted`, `trialsConverted`: chains whose free trial began in the bucket, and chains
///   whose first paid period after a free trial began in it (`analytics.subscription_lifecycles`).
/// With `currency`, every money series (`mrr` too) is converted into it by `analytics.fx_rate`: an
/// amount at the latest rate on or before its day (MRR at the bucket's end), among the rates
/// recorded by `asOf`; an amount in a currency without a rate is left out and its currency listed
/// in `unconverted` — never guessed.
/// With `asOf`, every series is as the overview answered at that instant: the facts recorded by
/// then and statuses judged then (`Sources.asOf`, OverviewMetrics+AsOf.swift).
/// Counts outside [from, to) are left out of the first and last bucket.
package enum OverviewMetrics {
    package enum Interval: String, CaseIterable, Sendable { case day, week, month }

    /// At most this many buckets in one answer (a year by day, ten years by week…).
    package static let maxBuckets = 400

    package struct Bucket: Sendable, Equatable {
        package var start: Int64
        package var active: Int64
        package var new: Int64
        package var churned: Int64
        package var refunded: Int64
        package var mrr: [String: Int64]
        package var revenue: [String: Int64] = [:]
        package var refunds: [String: Int64] = [:]
        package var proceeds: [String: Int64] = [:]
        package var trialsStarted: Int64 = 0
        package var trialsConverted: Int64 = 0
        /// Currencies of this bucket's amounts that had no rate into the reporting currency.
        package var unconverted: Set<String> = []
    }

    package static func query(
        from: Int64, to: Int64, interval: Interval, environment: String, currency: String? = nil, asOf: Int64? = nil
    ) -> Query {
        let source = asOf == nil ? Sources.current : Sources.asOf
        return """
            WITH bounds AS (
                SELECT analytics.ms(\(from)) AS f, analytics.ms(\(to)) AS t, ('1 ' || \(interval.rawValue))::interval AS step,
                    \(currency)::text AS cur, coalesce(analytics.ms(\(asOf)::bigint), 'infinity') AS as_of
            ), \(unescaped: source.ctes)buckets AS (
                SELECT b AS s, least(b + bounds.step, bounds.t) AS e, greatest(b, bounds.f) AS lo
                FROM bounds, generate_series(date_trunc(\(interval.rawValue), bounds.f, 'UTC'), bounds.t - interval '1 millisecond', bounds.step) AS b
            ), moves AS (
                -- Each amount with its rate into the reporting currency (1 without one: each its own).
                SELECT m.at, m.kind, m.currency, m.amount_milli, m.proceeds_milli,
                    coalesce(bounds.cur, m.currency) AS shown,
                    CASE WHEN bounds.cur IS NULL THEN 1
                         ELSE analytics.fx_rate(bounds.cur, m.currency, (m.at AT TIME ZONE 'UTC')::date, bounds.as_of) END AS rate
                FROM \(unescaped: source.movements) m, bounds
                WHERE m.environment = \(environment)::text AND m.at >= bounds.f AND m.at < bounds.t
            ), lives AS (
                SELECT l.trial_started_at, l.converted, l.first_paid_at
                FROM \(unescaped: source.lifecycles) l
                WHERE l.environment = \(environment)::text AND (l.trial_started_at IS NOT NULL OR l.converted)
            ), periods AS (
                SELECT x.original_transaction_id, x.purchase_date, x.price_milli, x.currency,
                    least(x.expires_date, coalesce(x.revocation_date, 'infinity')) AS ends,
                    CASE WHEN x.revocation_date IS NULL AND r.signed_date >= x.purchase_date
                        THEN greatest(x.expires_date, r.grace_period_expires_date)
                        ELSE least(x.expires_date, coalesce(x.revocation_date, 'infinity'))
                    END AS paid_until,
                    analytics.is_free_trial(x.price_milli, x.offer_type, x.offer_discount_type) AS free,
                    analytics.billing_period(x.product_id, x.environment, extract(epoch FROM x.expires_date - x.purchase_date),
                        x.billing_plan_type) AS period
                FROM \(unescaped: source.transactions) x
                CROSS JOIN bounds
                LEFT JOIN \(unescaped: source.renewalInfos) r ON r.original_transaction_id = x.original_transaction_id
                WHERE x.type = 'Auto-Renewable Subscription' AND NOT x.is_upgraded AND x.expires_date IS NOT NULL
                  AND x.purchase_date < bounds.t AND x.environment = \(environment)::text
                  AND greatest(x.expires_date, r.grace_period_expires_date) >= (SELECT min(e) FROM buckets)
            )
            SELECT (extract(epoch FROM b.s) * 1000)::bigint,
                (SELECT count(DISTINCT p.original_transaction_id) FROM periods p WHERE p.purchase_date < b.e AND p.ends >= b.e),
                (SELECT count(*) FROM \(unescaped: source.transactions) n
                 WHERE n.type = 'Auto-Renewable Subscription' AND n.transaction_id = n.original_transaction_id
                   AND n.purchase_date >= b.lo AND n.purchase_date < b.e AND n.environment = \(environment)::text),
                (SELECT count(*) FROM \(unescaped: source.subscriptions) c
                 WHERE c.status = 'expired' AND c.expires_date >= b.lo AND c.expires_date < b.e
                   AND c.environment = \(environment)::text),
                (SELECT count(*) FROM \(unescaped: source.transactions) r
                 WHERE r.revocation_date >= b.lo AND r.revocation_date < b.e
                   AND r.revocation_type IS DISTINCT FROM 'FAMILY_REVOKE' AND r.environment = \(environment)::text),
                (SELECT coalesce(jsonb_object_agg(m.shown, m.milli) FILTER (WHERE m.milli IS NOT NULL), '{}'::jsonb)::text
                    || chr(31) || coalesce(string_agg(m.unconverted, ','), '')
                 FROM (
                    SELECT coalesce(bounds.cur, r.currency) AS shown,
                        round(sum(r.monthly * r.rate))::bigint AS milli,
                        string_agg(DISTINCT r.currency, ',') FILTER (WHERE r.rate IS NULL) AS unconverted
                    FROM (SELECT c.currency, c.price_milli * bp.monthly_factor AS monthly,
                              CASE WHEN bounds.cur IS NULL THEN 1
                                   ELSE analytics.fx_rate(bounds.cur, c.currency, (b.e AT TIME ZONE 'UTC')::date, bounds.as_of) END AS rate
                          FROM (SELECT DISTINCT ON (p.original_transaction_id) p.*
                                FROM periods p WHERE p.purchase_date < b.e AND p.paid_until >= b.e
                                ORDER BY p.original_transaction_id, p.purchase_date DESC) c
                          JOIN analytics.billing_periods bp ON bp.period = c.period
                          WHERE c.price_milli IS NOT NULL AND c.currency IS NOT NULL AND NOT c.free) r
                    GROUP BY 1) m),
                (SELECT coalesce(jsonb_object_agg(x.shown, x.revenue) FILTER (WHERE x.converted), '{}')::text || chr(31)
                    || coalesce(jsonb_object_agg(x.shown, x.refunds) FILTER (WHERE x.converted), '{}')::text || chr(31)
                    || coalesce(jsonb_object_agg(x.shown, x.proceeds) FILTER (WHERE x.converted), '{}')::text || chr(31)
                    || coalesce(string_agg(x.unconverted, ','), '')
                 FROM (SELECT v.shown, bool_or(v.rate IS NOT NULL) AS converted,
                           coalesce(round(sum(v.amount_milli * v.rate) FILTER (WHERE v.kind = 'charge')), 0)::bigint AS revenue,
                           coalesce(round(-sum(v.amount_milli * v.rate) FILTER (WHERE v.kind = 'refund')), 0)::bigint AS refunds,
                           coalesce(round(sum(v.proceeds_milli * v.rate)), 0)::bigint AS proceeds,
                           string_agg(DISTINCT v.currency, ',') FILTER (WHERE v.rate IS NULL) AS unconverted
                       FROM moves v WHERE v.at >= b.lo AND v.at < b.e GROUP BY v.shown) x),
                (SELECT count(*) FROM lives l WHERE l.trial_started_at >= b.lo AND l.trial_started_at < b.e),
                (SELECT count(*) FROM lives l WHERE l.converted AND l.first_paid_at >= b.lo AND l.first_paid_at < b.e)
            FROM buckets b, bounds
            ORDER BY b.s
            """
    }

    package static func decode(_ rows: Rows) -> [Bucket] {
        // Columns 5 and 6 carry several parts separated by U+001F (never in JSON text): MRR and its
        // unconverted currencies; revenue, refunds, proceeds and theirs.
        func parts(_ text: String?) -> [Substring] {
            (text ?? "").split(separator: "\u{1F}", omittingEmptySubsequences: false)
        }
        func amounts(_ part: Substring) -> [String: Int64]? {
            (try? JSONValue.parse(Array(part.utf8)).objectValue)?.compactMapValues(\.int64Value)
        }
        func currencies(_ part: Substring) -> Set<String> { Set(part.split(separator: ",").map(String.init)) }
        return (0..<rows.count).compactMap { row in
            let mrr = parts(rows[row, 5])
            let money = parts(rows[row, 6])
            guard let start = rows[row, 0].flatMap({ Int64($0) }), let active = rows[row, 1].flatMap({ Int64($0) }),
                let new = rows[row, 2].flatMap({ Int64($0) }), let churned = rows[row, 3].flatMap({ Int64($0) }),
                let refunded = rows[row, 4].flatMap({ Int64($0) }),
                mrr.count == 2, let mrrAmounts = amounts(mrr[0]), money.count == 4,
                let revenue = amounts(money[0]), let refunds = amounts(money[1]), let proceeds = amounts(money[2]),
                let started = rows[row, 7].flatMap({ Int64($0) }), let converted = rows[row, 8].flatMap({ Int64($0) })
            else { return nil }
            return Bucket(
                start: start, active: active, new: new, churned: churned, refunded: refunded, mrr: mrrAmounts,
                revenue: revenue, refunds: refunds, proceeds: proceeds, trialsStarted: started,
                trialsConverted: converted,
                unconverted: currencies(mrr[1]).union(currencies(money[3])))
        }
    }

    /// How many buckets [from, to) spans (to refuse a range too long before querying).
    package static func bucketCount(from: Int64, to: Int64, interval: Interval) -> Int64 {
        let span = max(0, to - from)
        switch interval {
        case .day: return span / 86_400_000 + 2
        case .week: return span / (7 * 86_400_000) + 2
        case .month: return span / (28 * 86_400_000) + 2
        }
    }

    /// The answer: `{"from", "to", "interval", "environment", "currency", "asOf", "unconverted", "series": {…}}`.
    package static func json(
        _ buckets: [Bucket], from: Int64, to: Int64, interval: Interval, environment: String, currency: String? = nil,
        asOf: Int64? = nil
    ) -> [UInt8] {
        var w = JSONWriter(capacity: 256 + buckets.count * 200)
        func series(_ name: String, _ value: (Bucket) -> Int64) {
            w.key(name)
            w.beginArray()
            for bucket in buckets {
                w.beginObject()
                w.key("t")
                w.string(RFC3339.format(bucket.start))
                w.key("value")
                w.int(value(bucket))
                w.endObject()
            }
            w.endArray()
        }
        w.beginObject()
        w.key("from")
        w.string(RFC3339.format(from))
        w.key("to")
        w.string(RFC3339.format(to))
        w.key("interval")
        w.string(interval.rawValue)
        w.key("environment")
        w.string(environment)
        w.key("currency")
        w.stringOrNull(currency)
        w.key("asOf")
        if let asOf { w.string(RFC3339.format(asOf)) } else { w.null() }
        w.key("unconverted")
        w.beginArray()
        for code in buckets.reduce(into: Set<String>(), { $0.formUnion($1.unconverted) }).sorted() { w.string(code) }
        w.endArray()
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
