-- Money you can quote (api.md §3.1), first step: no figure mixes environments, and MRR follows a
-- product's billing period instead of the raw length of each transaction (a 5-minute Sandbox
-- month scaled to a calendar month counted 8,766 times its price: MRR $437,872 from three test
-- subscriptions).
--
-- Every view below keeps its columns and appends the new ones at the end, so CREATE OR REPLACE
-- keeps their grants, their comments and the views that depend on them.

-- The billing period a subscription product declares (config `period`, ISO 8601), published with
-- the rest of the catalog; NULL when the config gives none.
ALTER TABLE analytics.products ADD COLUMN period TEXT;
COMMENT ON COLUMN analytics.products.period IS 'Billing period the config declares for a subscription (P1W, P1M, P2M, P3M, P6M or P1Y); NULL: none, analytics.billing_period snaps each transaction''s length instead.';

-- Apple's offerDiscountType, to tell a free trial (offer_type 1, FREE_TRIAL) from a paid intro
-- offer. Filled for the rows already there from the event each one was kept from (its seq), so
-- no rebuild is needed; catch_up fills it from now on (its new definition is in 0039, which
-- redefines it once for 0036, 0037 and 0039).
ALTER TABLE analytics.transactions ADD COLUMN offer_discount_type TEXT;
COMMENT ON COLUMN analytics.transactions.offer_discount_type IS 'Apple offerDiscountType of an offer: FREE_TRIAL, PAY_AS_YOU_GO or PAY_UP_FRONT; NULL without one.';
UPDATE analytics.transactions t SET offer_discount_type = e.data->>'offerDiscountType'
FROM es.events e WHERE e.seq = t.seq AND e.data ? 'offerDiscountType';

-- The six billing periods App Store subscriptions offer, with the length each lasts in
-- Production (and Xcode, LocalTesting: calendar time) and in Sandbox (Apple's accelerated
-- renewal rates), and the factor that turns one period's price into a month's.
CREATE VIEW analytics.billing_periods AS
SELECT p.period, p.seconds::bigint AS seconds, p.sandbox_seconds::bigint AS sandbox_seconds,
    p.monthly_factor::numeric AS monthly_factor
FROM (VALUES
    ('P1W', 7 * 86400, 180, 30.436875 / 7),
    ('P1M', 2629746, 300, 1::numeric),
    ('P2M', 2 * 2629746, 600, 1::numeric / 2),
    ('P3M', 3 * 2629746, 900, 1::numeric / 3),
    ('P6M', 6 * 2629746, 1800, 1::numeric / 6),
    ('P1Y', 12 * 2629746, 3600, 1::numeric / 12)
) AS p(period, seconds, sandbox_seconds, monthly_factor);
COMMENT ON VIEW analytics.billing_periods IS 'The six App Store billing periods: their length in Production and in Sandbox, and the factor that normalises a period''s price to a month (MRR).';
COMMENT ON COLUMN analytics.billing_periods.period IS 'ISO 8601 period: P1W, P1M, P2M, P3M, P6M or P1Y.';
COMMENT ON COLUMN analytics.billing_periods.seconds IS 'Nominal length in Production (a month is 30.436875 days, 2629746 s; a year twelve of them).';
COMMENT ON COLUMN analytics.billing_periods.sandbox_seconds IS 'Length in Sandbox after Apple''s accelerated renewal rates (3, 5, 10, 15, 30 minutes, 1 hour).';
COMMENT ON COLUMN analytics.billing_periods.monthly_factor IS 'price × monthly_factor = the monthly price: 30.436875 / 7 for P1W, 1 for P1M, 1/2, 1/3, 1/6, 1/12 for P2M, P3M, P6M, P1Y.';

-- The billing period of one subscription period: the product's configured `period` if any, else
-- the period's length (expires − purchase, in seconds) snapped to the nearest standard one by
-- ratio (nearest in log scale: 4 minutes in Sandbox is P1M, as 4/3 > 5/4; 20 days in Production
-- is P1M, as 30.4/20 < 20/7). Sandbox lengths follow Apple's accelerated table; every other
-- environment uses calendar lengths. NULL when neither is known (no positive length). The one
-- place MRR learns a period: the overview and analysts call it alike.
CREATE FUNCTION analytics.billing_period(p_product_id text, p_environment text, p_seconds numeric) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT coalesce(
        (SELECT p.period FROM analytics.products p WHERE p.product_id = p_product_id AND p.period IS NOT NULL),
        (SELECT b.period FROM analytics.billing_periods b WHERE p_seconds > 0
         ORDER BY abs(ln(p_seconds / CASE WHEN p_environment = 'Sandbox' THEN b.sandbox_seconds ELSE b.seconds END)),
             b.seconds
         LIMIT 1))
$$;
COMMENT ON FUNCTION analytics.billing_period(text, text, numeric) IS 'Billing period of a subscription period (product_id, environment, length in seconds): the catalog''s period, else the length snapped to the nearest of analytics.billing_periods by ratio (Sandbox: accelerated lengths).';

-- A balance movement of a consumable purchase or refund has its transaction's store environment;
-- a debit or credit is the backend's act on a balance, in no store environment: NULL.
CREATE OR REPLACE VIEW analytics.balance_ledger AS
WITH credits AS (
    SELECT o.user_id, g.key AS currency, (g.value #>> '{}')::bigint * greatest(t.quantity, 1) AS amount,
        t.purchase_date, t.revocation_date, t.transaction_id, t.product_id, t.environment
    FROM analytics.transactions t
    JOIN analytics.chain_owners o USING (original_transaction_id)
    LEFT JOIN analytics.products p USING (product_id)
    CROSS JOIN LATERAL jsonb_each(
        CASE
            WHEN p.product_id IS NULL THEN
                CASE WHEN t.type = 'Consumable' THEN jsonb_build_object(t.product_id, 1) ELSE '{}'::jsonb END
            WHEN p.type = 'consumable' THEN
                CASE WHEN p.grants = '{}'::jsonb THEN jsonb_build_object(t.product_id, 1) ELSE p.grants END
            ELSE '{}'::jsonb
        END) g
)
SELECT c.user_id, c.currency, 'purchase' AS kind, c.amount, c.purchase_date AS at, c.transaction_id,
    c.product_id, NULL::text AS idempotency_key, NULL::text AS reason, c.environment
FROM credits c
UNION ALL
SELECT c.user_id, c.currency, 'refund', -c.amount, c.revocation_date, c.transaction_id, c.product_id, NULL, NULL,
    c.environment
FROM credits c WHERE c.revocation_date IS NOT NULL
UNION ALL
SELECT m.user_id, m.currency, m.kind, m.amount, m.at, NULL, NULL, m.idempotency_key, m.reason, NULL
FROM analytics.balance_movements m;
COMMENT ON COLUMN analytics.balance_ledger.environment IS 'Store environment of the purchase or refund (Production, Sandbox, Xcode, LocalTesting); NULL for debits and credits, which no store environment made.';

-- Revenue per day, currency and environment: Sandbox test purchases no longer add to Production's.
CREATE OR REPLACE VIEW analytics.daily_revenue AS
SELECT (t.purchase_date AT TIME ZONE 'UTC')::date AS day, t.currency, count(*) AS transactions,
    sum(t.price_milli) AS gross_milli,
    coalesce(sum(t.price_milli) FILTER (WHERE t.revocation_date IS NOT NULL), 0) AS refunded_milli,
    sum(t.price_milli) - coalesce(sum(t.price_milli) FILTER (WHERE t.revocation_date IS NOT NULL), 0) AS net_milli,
    t.environment
FROM analytics.transactions t
WHERE t.price_milli IS NOT NULL AND t.currency IS NOT NULL
GROUP BY 1, 2, t.environment;
COMMENT ON VIEW analytics.daily_revenue IS 'Revenue per UTC day (of purchase), currency and environment, in milliunits.';
COMMENT ON COLUMN analytics.daily_revenue.environment IS 'Production, Sandbox, Xcode or LocalTesting: sum one environment at a time.';

-- One row per day and environment (every environment with a transaction, from the first day).
CREATE OR REPLACE VIEW analytics.daily_metrics AS
WITH subs AS (
    SELECT * FROM analytics.transactions WHERE type = 'Auto-Renewable Subscription'
), bounds AS (
    SELECT min((purchase_date AT TIME ZONE 'UTC')::date) AS first_day FROM analytics.transactions
), environments AS (
    SELECT DISTINCT t.environment FROM analytics.transactions t
), days AS (
    SELECT d.day::date AS day, v.environment
    FROM bounds b
    CROSS JOIN generate_series(b.first_day, greatest(b.first_day, (now() AT TIME ZONE 'UTC')::date), interval '1 day') AS d(day)
    CROSS JOIN environments v
    WHERE b.first_day IS NOT NULL
), new_subs AS (
    SELECT (purchase_date AT TIME ZONE 'UTC')::date AS day, environment, count(*) AS n FROM subs
    WHERE transaction_id = original_transaction_id GROUP BY 1, 2
), renewals AS (
    SELECT (purchase_date AT TIME ZONE 'UTC')::date AS day, environment, count(*) AS n FROM subs
    WHERE transaction_id <> original_transaction_id GROUP BY 1, 2
), expirations AS (
    SELECT (expires_date AT TIME ZONE 'UTC')::date AS day, environment, count(*) AS n FROM analytics.subscriptions
    WHERE status = 'expired' GROUP BY 1, 2
), refunds AS (
    SELECT (revocation_date AT TIME ZONE 'UTC')::date AS day, environment, count(*) AS n FROM analytics.transactions
    WHERE revocation_date IS NOT NULL GROUP BY 1, 2
), active AS (
    SELECT d.day, d.environment, count(DISTINCT s.original_transaction_id) AS n
    FROM days d JOIN subs s
      ON s.environment = d.environment
     AND s.purchase_date < ((d.day + 1)::timestamp AT TIME ZONE 'UTC')
     AND s.expires_date >= ((d.day + 1)::timestamp AT TIME ZONE 'UTC')
     AND NOT s.is_upgraded
     AND (s.revocation_date IS NULL OR s.revocation_date >= ((d.day + 1)::timestamp AT TIME ZONE 'UTC'))
    GROUP BY d.day, d.environment
), revenue AS (
    SELECT r.day, r.environment, jsonb_object_agg(r.currency, r.gross_milli) AS by_currency
    FROM analytics.daily_revenue r GROUP BY r.day, r.environment
)
SELECT d.day, coalesce(n.n, 0) AS new_subscriptions, coalesce(rn.n, 0) AS renewals,
    coalesce(x.n, 0) AS expirations, coalesce(rf.n, 0) AS refunds, coalesce(a.n, 0) AS active_subscriptions,
    coalesce(rv.by_currency, '{}'::jsonb) AS revenue_milli_by_currency, d.environment
FROM days d
LEFT JOIN new_subs n USING (day, environment) LEFT JOIN renewals rn USING (day, environment)
LEFT JOIN expirations x USING (day, environment) LEFT JOIN refunds rf USING (day, environment)
LEFT JOIN active a USING (day, environment) LEFT JOIN revenue rv USING (day, environment);
COMMENT ON VIEW analytics.daily_metrics IS 'Per UTC day since the first transaction and per environment: subscription movements and gross revenue.';
COMMENT ON COLUMN analytics.daily_metrics.environment IS 'Production, Sandbox, Xcode or LocalTesting: each day has one row per environment with any transaction.';


-- The overview (run as the service) calls billing_period, which reads billing_periods and
-- products as its caller; analysts read and call both.
GRANT SELECT ON analytics.billing_periods TO iap_analyst, iap_ledger_service;
GRANT EXECUTE ON FUNCTION analytics.billing_period(text, text, numeric) TO iap_analyst, iap_ledger_service;
