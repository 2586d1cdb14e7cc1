-- Money you can quote (api.md §3.1), second step: one row per charge and per refund, with Apple's
-- commission and an estimated proceeds figure, and prorated refunds (revocationPercentage, App
-- Store Server API 1.19) counted at their share, on the day they happened.
--
-- revenue_movements is a view over the kept facts, not a table written once: a fact that
-- arrives late (a renewal out of order, a refund Apple reverses) restates exactly the rows it
-- touches, as a replay would, and every figure follows from the log and the config in force.

-- Apple's revocationPercentage (milliunits: 50000 is half) of a prorated refund; NULL for a full
-- one. Filled for the rows already there from the event each was kept from, like 0036 did.
ALTER TABLE analytics.transactions ADD COLUMN revocation_percentage BIGINT;
COMMENT ON COLUMN analytics.transactions.revocation_percentage IS 'Apple revocationPercentage of a prorated refund (REFUND_PRORATED), in milliunits (50000 = 50 %); NULL: none given, the whole price.';
UPDATE analytics.transactions t SET revocation_percentage = (e.data->>'revocationPercentage')::bigint
FROM es.events e WHERE e.seq = t.seq AND e.data ? 'revocationPercentage';

-- Each app's commission program (config `commission`, api.md §1), published by the service at
-- start as analytics.products is.
CREATE TABLE analytics.apps (
    bundle_id  TEXT PRIMARY KEY,
    commission TEXT NOT NULL CHECK (commission IN ('standard', 'small-business')),
    updated_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE analytics.apps IS 'The configured apps and their commission program, published by the service at start.';
COMMENT ON COLUMN analytics.apps.bundle_id IS 'The app''s bundle id.';
COMMENT ON COLUMN analytics.apps.commission IS 'standard (30 %, 15 % for a subscription''s periods after its first paid year) or small-business (15 % everywhere).';
COMMENT ON COLUMN analytics.apps.updated_at IS 'When the service last published it.';

-- Every recorded version of every transaction (one TransactionRecorded event each): a refund,
-- its reversal and a prorated share each re-sign the transaction.
CREATE TABLE analytics.transaction_versions (
    seq                     BIGINT PRIMARY KEY,
    transaction_id          TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    signed_date             TIMESTAMPTZ NOT NULL,
    expires_date            TIMESTAMPTZ,
    revocation_date         TIMESTAMPTZ,
    revocation_type         TEXT,
    revocation_percentage   BIGINT,
    environment             TEXT NOT NULL,
    recorded_at             TIMESTAMPTZ NOT NULL
);
CREATE INDEX transaction_versions_transaction_id_idx ON analytics.transaction_versions (transaction_id);
COMMENT ON TABLE analytics.transaction_versions IS 'Every recorded version of a transaction (one per TransactionRecorded event): how its revocation changed over time.';
COMMENT ON COLUMN analytics.transaction_versions.seq IS 'The event''s position in the log.';
COMMENT ON COLUMN analytics.transaction_versions.transaction_id IS 'Apple transactionId.';
COMMENT ON COLUMN analytics.transaction_versions.original_transaction_id IS 'Apple originalTransactionId (the chain).';
COMMENT ON COLUMN analytics.transaction_versions.signed_date IS 'When Apple signed this version.';
COMMENT ON COLUMN analytics.transaction_versions.expires_date IS 'Its expiresDate (subscriptions).';
COMMENT ON COLUMN analytics.transaction_versions.revocation_date IS 'Its revocationDate; NULL: not revoked (or the revocation was reversed).';
COMMENT ON COLUMN analytics.transaction_versions.revocation_type IS 'REFUND_FULL, REFUND_PRORATED or FAMILY_REVOKE.';
COMMENT ON COLUMN analytics.transaction_versions.revocation_percentage IS 'Share refunded in milliunits (prorated refunds); NULL: all of it.';
COMMENT ON COLUMN analytics.transaction_versions.environment IS 'Production, Sandbox, Xcode or LocalTesting.';
COMMENT ON COLUMN analytics.transaction_versions.recorded_at IS 'When the ledger recorded this version.';
INSERT INTO analytics.transaction_versions
SELECT e.seq, e.data->>'transactionId', e.data->>'originalTransactionId',
    analytics.ms((e.data->>'signedDate')::bigint), analytics.ms((e.data->>'expiresDate')::bigint),
    analytics.ms((e.data->>'revocationDate')::bigint), e.data->>'revocationType',
    (e.data->>'revocationPercentage')::bigint, e.data->>'environment', e.recorded_at
FROM es.events e, es.checkpoints c
WHERE c.name = 'analytics' AND e.type = 'TransactionRecorded' AND (e.tx, e.seq) <= (c.tx, c.seq);


-- One row per charge and per refund (api.md §3.1).
--  * A charge: each priced transaction (price > 0, a currency), at its purchase date.
--  * A refund: each change of a transaction's refunded share between two of its versions (in
--    the order the newest version wins by: signedDate, then revocationDate, then expiresDate):
--    the share is revocationPercentage (milliunits) for a prorated refund, 100000 for a full one
--    (or when Apple gives none), 0 when not revoked; FAMILY_REVOKE moves no money (0). A refund
--    is negative and dated by its revocation date; a refund Apple reverses adds a positive row,
--    dated when Apple signed the reversal. Amounts are truncated to the milliunit, and a later
--    share is taken against what was already refunded, so a full refund cancels its charge exactly.
--  * Commission: small-business 15 %; standard 30 %, but 15 % for an auto-renewable period that
--    begins once the chain's earlier paid periods (not free trials), each counted at its billing
--    period's nominal length (analytics.billing_period: a Sandbox month counts a month), add up
--    to 365 days; a lapse of more than 60 days between two paid periods starts the count again
--    (Sandbox lapses scaled by their period's acceleration). A refund has its charge's rate.
--  * Proceeds: amount × (1 − commission_rate), truncated toward zero — an estimate before the
--    taxes Apple withholds.
CREATE VIEW analytics.revenue_movements AS
WITH paid AS (
    SELECT t.transaction_id, t.original_transaction_id, t.purchase_date, t.expires_date,
        extract(epoch FROM t.expires_date - t.purchase_date) AS seconds, b.seconds AS nominal
    FROM analytics.transactions t
    JOIN analytics.billing_periods b
      ON b.period = analytics.billing_period(t.product_id, t.environment, extract(epoch FROM t.expires_date - t.purchase_date))
    WHERE t.type = 'Auto-Renewable Subscription' AND t.expires_date > t.purchase_date AND t.price_milli > 0
      AND NOT (t.offer_type = 1 AND t.offer_discount_type IS NOT DISTINCT FROM 'FREE_TRIAL')
), gaps AS (
    SELECT p.*,
        extract(epoch FROM p.purchase_date - lag(p.expires_date) OVER w) * coalesce(lag(p.nominal / p.seconds) OVER w, 1)
            AS gap
    FROM paid p
    WINDOW w AS (PARTITION BY p.original_transaction_id ORDER BY p.purchase_date, p.transaction_id)
), runs AS (
    SELECT g.*, count(*) FILTER (WHERE g.gap > 60 * 86400) OVER (
        PARTITION BY g.original_transaction_id ORDER BY g.purchase_date, g.transaction_id) AS run
    FROM gaps g
), served AS (
    SELECT r.transaction_id, coalesce(sum(r.nominal) OVER (
        PARTITION BY r.original_transaction_id, r.run ORDER BY r.purchase_date, r.transaction_id
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS served_before
    FROM runs r
), charges AS (
    SELECT t.transaction_id, t.original_transaction_id, t.product_id, t.environment, t.currency, t.purchase_date,
        t.price_milli,
        CASE WHEN a.commission = 'small-business' THEN 0.15
             WHEN s.served_before >= 365 * 86400 THEN 0.15
             ELSE 0.30 END::numeric(3, 2) AS commission_rate
    FROM analytics.transactions t
    LEFT JOIN served s USING (transaction_id)
    LEFT JOIN analytics.apps a USING (bundle_id)
    WHERE t.price_milli > 0 AND t.currency IS NOT NULL
), shares AS (
    SELECT v.transaction_id, v.seq, v.signed_date, v.revocation_date,
        CASE WHEN v.revocation_date IS NULL OR v.revocation_type = 'FAMILY_REVOKE' THEN 0
             ELSE least(greatest(coalesce(v.revocation_percentage, 100000), 0), 100000) END AS share,
        row_number() OVER w AS n
    FROM analytics.transaction_versions v
    WINDOW w AS (PARTITION BY v.transaction_id
        ORDER BY v.signed_date, coalesce(v.revocation_date, '-infinity'), coalesce(v.expires_date, '-infinity'), v.seq)
), refunded AS (
    -- What had been refunded after each version, in money and in proceeds given back.
    SELECT s.*, c.price_milli, c.commission_rate,
        trunc(c.price_milli::numeric * s.share / 100000) AS amount,
        trunc(trunc(c.price_milli::numeric * s.share / 100000) * (1 - c.commission_rate)) AS proceeds
    FROM shares s JOIN charges c USING (transaction_id)
), steps AS (
    SELECT r.*, r.amount - coalesce(lag(r.amount) OVER w, 0) AS amount_step,
        r.proceeds - coalesce(lag(r.proceeds) OVER w, 0) AS proceeds_step
    FROM refunded r
    WINDOW w AS (PARTITION BY r.transaction_id ORDER BY r.n)
)
SELECT c.purchase_date AS at, c.environment, 'charge'::text AS kind, c.transaction_id, c.original_transaction_id,
    c.product_id, o.user_id, c.currency, c.price_milli AS amount_milli, c.commission_rate,
    trunc(c.price_milli * (1 - c.commission_rate))::bigint AS proceeds_milli
FROM charges c
LEFT JOIN analytics.chain_owners o USING (original_transaction_id)
UNION ALL
SELECT CASE WHEN st.amount_step > 0 THEN coalesce(st.revocation_date, st.signed_date) ELSE st.signed_date END,
    c.environment, 'refund', c.transaction_id, c.original_transaction_id, c.product_id, o.user_id, c.currency,
    (-st.amount_step)::bigint, c.commission_rate, (-st.proceeds_step)::bigint
FROM steps st
JOIN charges c USING (transaction_id)
LEFT JOIN analytics.chain_owners o USING (original_transaction_id)
WHERE st.amount_step <> 0;
COMMENT ON VIEW analytics.revenue_movements IS 'One row per charge and per refund (signed), with Apple''s commission rate and estimated proceeds; a view over the kept facts, so a late fact restates exactly what it touches.';
COMMENT ON COLUMN analytics.revenue_movements.at IS 'When the money moved: the purchase date of a charge, the revocation date of a refund, the signing of a reversal.';
COMMENT ON COLUMN analytics.revenue_movements.environment IS 'Production, Sandbox, Xcode or LocalTesting: sum one environment at a time.';
COMMENT ON COLUMN analytics.revenue_movements.kind IS 'charge or refund (a reversed refund is a positive refund row).';
COMMENT ON COLUMN analytics.revenue_movements.transaction_id IS 'Apple transactionId.';
COMMENT ON COLUMN analytics.revenue_movements.original_transaction_id IS 'Apple originalTransactionId (the chain).';
COMMENT ON COLUMN analytics.revenue_movements.product_id IS 'The product.';
COMMENT ON COLUMN analytics.revenue_movements.user_id IS 'The chain''s owner now (NULL: unclaimed).';
COMMENT ON COLUMN analytics.revenue_movements.currency IS 'ISO 4217 currency of the price.';
COMMENT ON COLUMN analytics.revenue_movements.amount_milli IS 'Signed amount in milliunits: a charge''s price; a refund''s share of it, negative (positive when Apple reversed a refund).';
COMMENT ON COLUMN analytics.revenue_movements.commission_rate IS 'Apple''s commission as a fraction: 0.30, or 0.15 (small-business, or a subscription period after the chain''s first paid year).';
COMMENT ON COLUMN analytics.revenue_movements.proceeds_milli IS 'Signed estimate of what the developer receives: amount × (1 − commission_rate), truncated; before the taxes Apple withholds.';

-- Revenue per UTC day, currency and environment, summed from revenue_movements by the day each
-- movement happened (a refund counts on the day it was made, at its share). Columns kept in
-- place; proceeds_milli appended.
CREATE OR REPLACE VIEW analytics.daily_revenue AS
SELECT (m.at AT TIME ZONE 'UTC')::date AS day, m.currency, count(*) FILTER (WHERE m.kind = 'charge') AS transactions,
    coalesce(sum(m.amount_milli) FILTER (WHERE m.kind = 'charge'), 0) AS gross_milli,
    coalesce(-sum(m.amount_milli) FILTER (WHERE m.kind = 'refund'), 0) AS refunded_milli,
    sum(m.amount_milli) AS net_milli,
    m.environment,
    sum(m.proceeds_milli) AS proceeds_milli
FROM analytics.revenue_movements m
GROUP BY 1, 2, m.environment;
COMMENT ON VIEW analytics.daily_revenue IS 'Revenue per UTC day, currency and environment, in milliunits: revenue_movements summed by the day each movement happened.';
COMMENT ON COLUMN analytics.daily_revenue.day IS 'UTC day the money moved (a charge''s purchase, a refund''s revocation).';
COMMENT ON COLUMN analytics.daily_revenue.transactions IS 'Charges that day.';
COMMENT ON COLUMN analytics.daily_revenue.gross_milli IS 'Sum of the charges that day.';
COMMENT ON COLUMN analytics.daily_revenue.refunded_milli IS 'Refunded that day (positive; prorated refunds at their share, reversals subtracted).';
COMMENT ON COLUMN analytics.daily_revenue.net_milli IS 'gross_milli − refunded_milli.';
COMMENT ON COLUMN analytics.daily_revenue.proceeds_milli IS 'Estimated proceeds of that day''s charges and refunds (revenue_movements.proceeds_milli).';

-- A prorated refund of a consumable takes back its share of the credit, rounded down (the ledger's
-- rule, Transaction.takenBack): the balance ledger's refund row says so, and still sums to
-- analytics.balances.
CREATE OR REPLACE VIEW analytics.balance_ledger AS
WITH credits AS (
    SELECT o.user_id, g.key AS currency, (g.value #>> '{}')::bigint * greatest(t.quantity, 1) AS amount,
        t.purchase_date, t.revocation_date, t.transaction_id, t.product_id, t.environment, t.revocation_percentage
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
SELECT c.user_id, c.currency, 'refund',
    -(c.amount * least(greatest(coalesce(c.revocation_percentage, 100000), 0), 100000) / 100000),
    c.revocation_date, c.transaction_id, c.product_id, NULL, NULL, c.environment
FROM credits c WHERE c.revocation_date IS NOT NULL
UNION ALL
SELECT m.user_id, m.currency, m.kind, m.amount, m.at, NULL, NULL, m.idempotency_key, m.reason, NULL
FROM analytics.balance_movements m;
COMMENT ON COLUMN analytics.balance_ledger.amount IS 'Signed change of the balance (a prorated refund takes back its share of the credit, rounded down).';

GRANT SELECT ON analytics.revenue_movements, analytics.transaction_versions, analytics.apps TO iap_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON analytics.transaction_versions, analytics.apps TO iap_ledger_service;
GRANT SELECT ON analytics.revenue_movements TO iap_ledger_service;
