-- Apple's newer renewal-info fields (api.md §8, App Store Server API 1.12–1.18) and commitment
-- plans' billing in analytics. analytics.renewal_infos (and its versions and as-of function of
-- 0043) gain what the renewal info says of the next renewal: its price and currency, its offer
-- (type, discount type, period, id), the win-back offers the customer may take, and the
-- appAccountToken and appTransactionId it carries. analytics.transactions (and its versions and
-- as-of function) gain Apple's billingPlanType: a MONTHLY plan (a 1-year product billed monthly
-- with a 12-month commitment) is billed, and counted in MRR, by the month whatever the
-- catalog's period says. Offers are named by analytics.offer_type_name, offer codes
-- (offer_type 3) as offer_code and win-back offers (4) as win_back. Existing rows are filled
-- from the event each one is (its seq), as 0043 did: no rebuild.

-- The ids of a renewal info's eligibleWinBackOfferIds, in Apple's order (best first). The event
-- stores them as the text of a JSON array of strings (events are flat objects of scalars).
CREATE FUNCTION analytics.offer_ids(p_json text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT CASE WHEN p_json IS NULL THEN NULL ELSE ARRAY(
        SELECT i.id FROM jsonb_array_elements_text(p_json::jsonb) WITH ORDINALITY AS i(id, n) ORDER BY i.n) END
$$;
COMMENT ON FUNCTION analytics.offer_ids(text) IS 'The offer ids of a stored eligibleWinBackOfferIds (the text of a JSON array), in Apple''s order; NULL when absent.';

-- Apple's offerType by name: what analytics calls each offer.
CREATE FUNCTION analytics.offer_type_name(p_offer_type bigint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT CASE p_offer_type WHEN 1 THEN 'introductory' WHEN 2 THEN 'promotional' WHEN 3 THEN 'offer_code'
        WHEN 4 THEN 'win_back' END
$$;
COMMENT ON FUNCTION analytics.offer_type_name(bigint) IS 'Apple''s offerType by name: 1 introductory, 2 promotional, 3 offer_code, 4 win_back; NULL without an offer (or for a type Apple adds later).';

CREATE VIEW analytics.offer_types AS
SELECT t.offer_type, analytics.offer_type_name(t.offer_type) AS name
FROM (VALUES (1::bigint), (2), (3), (4)) AS t(offer_type);
COMMENT ON VIEW analytics.offer_types IS 'Apple''s offer types (offerType) and the names analytics gives them.';
COMMENT ON COLUMN analytics.offer_types.offer_type IS 'Apple''s offerType.';
COMMENT ON COLUMN analytics.offer_types.name IS 'introductory, promotional, offer_code (Apple''s offer codes, renamed in API 1.18) or win_back.';

CREATE VIEW analytics.offer_discount_types AS
SELECT t.offer_discount_type FROM (VALUES ('FREE_TRIAL'), ('PAY_AS_YOU_GO'), ('PAY_UP_FRONT'), ('ONE_TIME')) AS t(offer_discount_type);
COMMENT ON VIEW analytics.offer_discount_types IS 'Apple''s offerDiscountType values, named as Apple names them (ONE_TIME since API 1.18).';
COMMENT ON COLUMN analytics.offer_discount_types.offer_discount_type IS 'FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME.';

COMMENT ON COLUMN analytics.transactions.offer_type IS 'Apple offerType: 1 introductory, 2 promotional, 3 offer code, 4 win-back (analytics.offer_type_name: offer_code, win_back).';
COMMENT ON COLUMN analytics.transactions.offer_discount_type IS 'Apple offerDiscountType: FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME; NULL without an offer.';
COMMENT ON COLUMN analytics.transaction_versions.offer_type IS '1 introductory, 2 promotional, 3 offer code, 4 win-back (analytics.offer_type_name: offer_code, win_back).';
COMMENT ON COLUMN analytics.transaction_versions.offer_discount_type IS 'Apple offerDiscountType: FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME; NULL without an offer.';

ALTER TABLE analytics.transactions ADD COLUMN billing_plan_type TEXT;
ALTER TABLE analytics.transaction_versions ADD COLUMN billing_plan_type TEXT;
UPDATE analytics.transactions t SET billing_plan_type = e.data->>'billingPlanType'
FROM es.events e WHERE e.seq = t.seq AND e.data ? 'billingPlanType';
UPDATE analytics.transaction_versions v SET billing_plan_type = e.data->>'billingPlanType'
FROM es.events e WHERE e.seq = v.seq AND e.data ? 'billingPlanType';
COMMENT ON COLUMN analytics.transactions.billing_plan_type IS 'Apple billingPlanType (API 1.21): MONTHLY for a monthly plan with a 12-month commitment, billed (and counted in MRR) by the month; NULL for every other plan.';
COMMENT ON COLUMN analytics.transaction_versions.billing_plan_type IS 'Apple billingPlanType: MONTHLY for a commitment plan billed monthly; NULL otherwise.';

ALTER TABLE analytics.renewal_infos
    ADD COLUMN renewal_price_milli BIGINT, ADD COLUMN currency TEXT, ADD COLUMN offer_type BIGINT,
    ADD COLUMN offer_discount_type TEXT, ADD COLUMN offer_period TEXT, ADD COLUMN offer_identifier TEXT,
    ADD COLUMN eligible_win_back_offer_ids TEXT[], ADD COLUMN app_account_token TEXT, ADD COLUMN app_transaction_id TEXT;
ALTER TABLE analytics.renewal_info_versions
    ADD COLUMN renewal_price_milli BIGINT, ADD COLUMN currency TEXT, ADD COLUMN offer_type BIGINT,
    ADD COLUMN offer_discount_type TEXT, ADD COLUMN offer_period TEXT, ADD COLUMN offer_identifier TEXT,
    ADD COLUMN eligible_win_back_offer_ids TEXT[], ADD COLUMN app_account_token TEXT, ADD COLUMN app_transaction_id TEXT;
UPDATE analytics.renewal_infos r SET
    renewal_price_milli = (e.data->>'renewalPrice')::bigint, currency = e.data->>'currency',
    offer_type = (e.data->>'offerType')::bigint, offer_discount_type = e.data->>'offerDiscountType',
    offer_period = e.data->>'offerPeriod', offer_identifier = e.data->>'offerIdentifier',
    eligible_win_back_offer_ids = analytics.offer_ids(e.data->>'eligibleWinBackOfferIds'),
    app_account_token = e.data->>'appAccountToken', app_transaction_id = e.data->>'appTransactionId'
FROM es.events e WHERE e.seq = r.seq;
UPDATE analytics.renewal_info_versions r SET
    renewal_price_milli = (e.data->>'renewalPrice')::bigint, currency = e.data->>'currency',
    offer_type = (e.data->>'offerType')::bigint, offer_discount_type = e.data->>'offerDiscountType',
    offer_period = e.data->>'offerPeriod', offer_identifier = e.data->>'offerIdentifier',
    eligible_win_back_offer_ids = analytics.offer_ids(e.data->>'eligibleWinBackOfferIds'),
    app_account_token = e.data->>'appAccountToken', app_transaction_id = e.data->>'appTransactionId'
FROM es.events e WHERE e.seq = r.seq;
COMMENT ON COLUMN analytics.renewal_infos.renewal_price_milli IS 'Apple renewalPrice: what the next renewal costs, in milliunits of currency.';
COMMENT ON COLUMN analytics.renewal_infos.currency IS 'ISO 4217 currency of renewal_price_milli.';
COMMENT ON COLUMN analytics.renewal_infos.offer_type IS 'Offer of the next renewal: 1 introductory, 2 promotional, 3 offer code, 4 win-back (analytics.offer_type_name: offer_code, win_back).';
COMMENT ON COLUMN analytics.renewal_infos.offer_discount_type IS 'FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME.';
COMMENT ON COLUMN analytics.renewal_infos.offer_period IS 'The offer''s duration, ISO 8601 (P1M…).';
COMMENT ON COLUMN analytics.renewal_infos.offer_identifier IS 'The offer''s id (promotional offer, offer code or win-back offer).';
COMMENT ON COLUMN analytics.renewal_infos.eligible_win_back_offer_ids IS 'Win-back offers the customer may take, best first, as Apple lists them; NULL when Apple sent none.';
COMMENT ON COLUMN analytics.renewal_infos.app_account_token IS 'The appAccountToken on the renewal info.';
COMMENT ON COLUMN analytics.renewal_infos.app_transaction_id IS 'Apple appTransactionId: one per Apple Account and app.';
COMMENT ON COLUMN analytics.renewal_info_versions.renewal_price_milli IS 'Apple renewalPrice: what the next renewal costs, in milliunits of currency.';
COMMENT ON COLUMN analytics.renewal_info_versions.currency IS 'ISO 4217 currency of renewal_price_milli.';
COMMENT ON COLUMN analytics.renewal_info_versions.offer_type IS 'Offer of the next renewal: 1 introductory, 2 promotional, 3 offer code, 4 win-back (analytics.offer_type_name: offer_code, win_back).';
COMMENT ON COLUMN analytics.renewal_info_versions.offer_discount_type IS 'FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT or ONE_TIME.';
COMMENT ON COLUMN analytics.renewal_info_versions.offer_period IS 'The offer''s duration, ISO 8601 (P1M…).';
COMMENT ON COLUMN analytics.renewal_info_versions.offer_identifier IS 'The offer''s id (promotional offer, offer code or win-back offer).';
COMMENT ON COLUMN analytics.renewal_info_versions.eligible_win_back_offer_ids IS 'Win-back offers the customer may take, best first, as Apple lists them; NULL when Apple sent none.';
COMMENT ON COLUMN analytics.renewal_info_versions.app_account_token IS 'The appAccountToken on the renewal info.';
COMMENT ON COLUMN analytics.renewal_info_versions.app_transaction_id IS 'Apple appTransactionId: one per Apple Account and app.';

-- The as-of functions of 0043, shaped as the tables they stand for: with their new columns.
CREATE OR REPLACE FUNCTION analytics.transactions_as_of(p_as_of timestamptz) RETURNS SETOF analytics.transactions
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT DISTINCT ON (v.transaction_id)
        v.transaction_id, v.original_transaction_id, v.product_id, v.bundle_id, v.type, v.purchase_date,
        v.original_purchase_date, v.expires_date, v.quantity, v.ownership_type, v.signed_date, v.revocation_date,
        v.revocation_reason, v.revocation_type, v.is_upgraded, v.offer_type, v.offer_identifier, v.environment,
        v.transaction_reason, v.web_order_line_item_id, v.price_milli, v.currency, v.storefront,
        min(v.recorded_at) OVER (PARTITION BY v.transaction_id), v.recorded_at, v.seq, v.offer_discount_type,
        v.revocation_percentage, v.billing_plan_type
    FROM analytics.transaction_versions v
    WHERE v.recorded_at <= p_as_of
    ORDER BY v.transaction_id, v.signed_date DESC, coalesce(v.revocation_date, '-infinity') DESC,
        coalesce(v.expires_date, '-infinity') DESC, v.seq DESC
$$;

CREATE OR REPLACE FUNCTION analytics.renewal_infos_as_of(p_as_of timestamptz) RETURNS SETOF analytics.renewal_infos
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT DISTINCT ON (v.original_transaction_id)
        v.original_transaction_id, v.product_id, v.auto_renew_product_id, v.auto_renew_status, v.is_in_billing_retry,
        v.grace_period_expires_date, v.expiration_intent, v.signed_date, v.environment, v.renewal_date, v.seq,
        v.renewal_price_milli, v.currency, v.offer_type, v.offer_discount_type, v.offer_period, v.offer_identifier,
        v.eligible_win_back_offer_ids, v.app_account_token, v.app_transaction_id
    FROM analytics.renewal_info_versions v
    WHERE v.recorded_at <= p_as_of
    ORDER BY v.original_transaction_id, v.signed_date DESC, v.seq DESC
$$;

-- The billing period of a period for MRR: a MONTHLY plan is billed by the month (P1M) whatever
-- the catalog says for its 1-year product; any other, analytics.billing_period's rule (0036).
CREATE FUNCTION analytics.billing_period(p_product_id text, p_environment text, p_seconds numeric, p_billing_plan_type text)
RETURNS text LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT CASE WHEN p_billing_plan_type = 'MONTHLY' THEN 'P1M'
        ELSE analytics.billing_period(p_product_id, p_environment, p_seconds) END
$$;
COMMENT ON FUNCTION analytics.billing_period(text, text, numeric, text) IS 'Billing period of a subscription period with its billingPlanType: P1M for a MONTHLY (commitment) plan, else analytics.billing_period(product_id, environment, seconds).';

-- The commission's year of service (0037's rule) counts each paid period at its billing period's
-- nominal length: a commitment plan's period is a month (P1M), not the year its product's catalog
-- period says, or its 15 % would come after its first month. The view (0037's) and its as-of
-- form (0043's), word for word but for that call.
CREATE OR REPLACE VIEW analytics.revenue_movements AS
WITH paid AS (
    SELECT t.transaction_id, t.original_transaction_id, t.purchase_date, t.expires_date,
        extract(epoch FROM t.expires_date - t.purchase_date) AS seconds, b.seconds AS nominal
    FROM analytics.transactions t
    JOIN analytics.billing_periods b
      ON b.period = analytics.billing_period(t.product_id, t.environment, extract(epoch FROM t.expires_date - t.purchase_date),
          t.billing_plan_type)
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
CREATE OR REPLACE FUNCTION analytics.revenue_movements_as_of(p_as_of timestamptz) RETURNS SETOF analytics.revenue_movements
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    WITH paid AS (
        SELECT t.transaction_id, t.original_transaction_id, t.purchase_date, t.expires_date,
            extract(epoch FROM t.expires_date - t.purchase_date) AS seconds, b.seconds AS nominal
        FROM analytics.transactions_as_of(p_as_of) t
        JOIN analytics.billing_periods b
          ON b.period = analytics.billing_period(t.product_id, t.environment, extract(epoch FROM t.expires_date - t.purchase_date),
              t.billing_plan_type)
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
        FROM analytics.transactions_as_of(p_as_of) t
        LEFT JOIN served s USING (transaction_id)
        LEFT JOIN analytics.apps a USING (bundle_id)
        WHERE t.price_milli > 0 AND t.currency IS NOT NULL
    ), shares AS (
        SELECT v.transaction_id, v.seq, v.signed_date, v.revocation_date,
            CASE WHEN v.revocation_date IS NULL OR v.revocation_type = 'FAMILY_REVOKE' THEN 0
                 ELSE least(greatest(coalesce(v.revocation_percentage, 100000), 0), 100000) END AS share,
            row_number() OVER w AS n
        FROM analytics.transaction_versions v
        WHERE v.recorded_at <= p_as_of
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
    WHERE st.amount_step <> 0
$$;

-- catch_up again (its one current definition was 0043's; this is that copy with two changes):
-- transactions carry billingPlanType, and renewal infos (newest and every version) the next
-- renewal's price, offer, win-back offers, appAccountToken and appTransactionId.
CREATE OR REPLACE FUNCTION analytics.catch_up(p_limit integer DEFAULT 20000) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    c_tx xid8 := '0'; c_seq bigint := 0; l_tx xid8; l_seq bigint; n integer;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT c.tx, c.seq INTO c_tx, c_seq FROM es.checkpoints c WHERE c.name = 'analytics' FOR UPDATE;
    IF NOT FOUND THEN c_tx := '0'; c_seq := 0; END IF;
    SELECT b.tx, b.seq, count(*) OVER ()::integer INTO l_tx, l_seq, n
    FROM (SELECT e.tx, e.seq FROM es.events e
          WHERE (e.tx, e.seq) > (c_tx, c_seq) AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY e.tx, e.seq LIMIT p_limit) b
    ORDER BY b.tx DESC, b.seq DESC LIMIT 1;
    IF NOT FOUND THEN RETURN 0; END IF;

    INSERT INTO analytics.transactions AS t
    SELECT DISTINCT ON (e.data->>'transactionId')
        e.data->>'transactionId', e.data->>'originalTransactionId', e.data->>'productId', e.data->>'bundleId',
        e.data->>'type', analytics.ms((e.data->>'purchaseDate')::bigint),
        analytics.ms((e.data->>'originalPurchaseDate')::bigint), analytics.ms((e.data->>'expiresDate')::bigint),
        coalesce((e.data->>'quantity')::bigint, 1), coalesce(e.data->>'inAppOwnershipType', 'PURCHASED'),
        analytics.ms((e.data->>'signedDate')::bigint), analytics.ms((e.data->>'revocationDate')::bigint),
        (e.data->>'revocationReason')::bigint, e.data->>'revocationType',
        coalesce((e.data->>'isUpgraded')::boolean, false), (e.data->>'offerType')::bigint,
        e.data->>'offerIdentifier', e.data->>'environment', e.data->>'transactionReason',
        e.data->>'webOrderLineItemId', (e.data->>'price')::numeric::bigint, e.data->>'currency',
        e.data->>'storefront', e.recorded_at, e.recorded_at, e.seq, e.data->>'offerDiscountType',
        (e.data->>'revocationPercentage')::bigint, e.data->>'billingPlanType'
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'TransactionRecorded'
    ORDER BY e.data->>'transactionId', (e.data->>'signedDate')::bigint DESC,
        coalesce((e.data->>'revocationDate')::bigint, -1) DESC, coalesce((e.data->>'expiresDate')::bigint, -1) DESC,
        e.seq DESC
    ON CONFLICT (transaction_id) DO UPDATE SET
        original_transaction_id = excluded.original_transaction_id, product_id = excluded.product_id,
        bundle_id = excluded.bundle_id, type = excluded.type, purchase_date = excluded.purchase_date,
        original_purchase_date = excluded.original_purchase_date, expires_date = excluded.expires_date,
        quantity = excluded.quantity, ownership_type = excluded.ownership_type, signed_date = excluded.signed_date,
        revocation_date = excluded.revocation_date, revocation_reason = excluded.revocation_reason,
        revocation_type = excluded.revocation_type, is_upgraded = excluded.is_upgraded,
        offer_type = excluded.offer_type, offer_identifier = excluded.offer_identifier,
        environment = excluded.environment, transaction_reason = excluded.transaction_reason,
        web_order_line_item_id = excluded.web_order_line_item_id, price_milli = excluded.price_milli,
        currency = excluded.currency, storefront = excluded.storefront,
        last_recorded_at = excluded.last_recorded_at, seq = excluded.seq,
        offer_discount_type = excluded.offer_discount_type, revocation_percentage = excluded.revocation_percentage,
        billing_plan_type = excluded.billing_plan_type
    WHERE (excluded.signed_date, coalesce(excluded.revocation_date, '-infinity'), coalesce(excluded.expires_date, '-infinity'))
       >= (t.signed_date, coalesce(t.revocation_date, '-infinity'), coalesce(t.expires_date, '-infinity'));

    -- Every version of every transaction, as recorded: what revenue_movements reads refunds and
    -- their reversals from (the newest version alone cannot say a refund was reversed).
    INSERT INTO analytics.transaction_versions
    SELECT e.seq, e.data->>'transactionId', e.data->>'originalTransactionId',
        analytics.ms((e.data->>'signedDate')::bigint), analytics.ms((e.data->>'expiresDate')::bigint),
        analytics.ms((e.data->>'revocationDate')::bigint), e.data->>'revocationType',
        (e.data->>'revocationPercentage')::bigint, e.data->>'environment', e.recorded_at,
        e.data->>'productId', e.data->>'bundleId', e.data->>'type', analytics.ms((e.data->>'purchaseDate')::bigint),
        analytics.ms((e.data->>'originalPurchaseDate')::bigint), coalesce((e.data->>'quantity')::bigint, 1),
        coalesce(e.data->>'inAppOwnershipType', 'PURCHASED'), (e.data->>'revocationReason')::bigint,
        coalesce((e.data->>'isUpgraded')::boolean, false), (e.data->>'offerType')::bigint, e.data->>'offerIdentifier',
        e.data->>'transactionReason', e.data->>'webOrderLineItemId', (e.data->>'price')::numeric::bigint,
        e.data->>'currency', e.data->>'storefront', e.data->>'offerDiscountType', e.data->>'billingPlanType'
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'TransactionRecorded'
    ON CONFLICT (seq) DO NOTHING;

    -- Exchange rates into a reporting currency (iap-ledger fx import), one row per day and currency.
    INSERT INTO analytics.exchange_rates
    SELECT e.seq, e.data->>'base', (r.value->>'date')::date, r.value->>'currency', (r.value->>'rate')::numeric,
        e.recorded_at
    FROM es.events e CROSS JOIN LATERAL jsonb_array_elements(e.data->'rates') AS r(value)
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'ExchangeRatesRecorded'
    ON CONFLICT DO NOTHING;

    -- Every version of every renewal info, as recorded: grace and billing retry as of an instant.
    INSERT INTO analytics.renewal_info_versions
    SELECT e.seq, e.data->>'originalTransactionId', e.data->>'productId', e.data->>'autoRenewProductId',
        (e.data->>'autoRenewStatus')::integer = 1, (e.data->>'isInBillingRetryPeriod')::boolean,
        analytics.ms((e.data->>'gracePeriodExpiresDate')::bigint), (e.data->>'expirationIntent')::bigint,
        analytics.ms((e.data->>'signedDate')::bigint), e.data->>'environment',
        analytics.ms((e.data->>'renewalDate')::bigint), e.recorded_at,
        (e.data->>'renewalPrice')::bigint, e.data->>'currency', (e.data->>'offerType')::bigint,
        e.data->>'offerDiscountType', e.data->>'offerPeriod', e.data->>'offerIdentifier',
        analytics.offer_ids(e.data->>'eligibleWinBackOfferIds'), e.data->>'appAccountToken', e.data->>'appTransactionId'
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'RenewalInfoRecorded'
    ON CONFLICT (seq) DO NOTHING;

    INSERT INTO analytics.renewal_infos AS r
    SELECT DISTINCT ON (e.data->>'originalTransactionId')
        e.data->>'originalTransactionId', e.data->>'productId', e.data->>'autoRenewProductId',
        (e.data->>'autoRenewStatus')::integer = 1, (e.data->>'isInBillingRetryPeriod')::boolean,
        analytics.ms((e.data->>'gracePeriodExpiresDate')::bigint), (e.data->>'expirationIntent')::bigint,
        analytics.ms((e.data->>'signedDate')::bigint), e.data->>'environment',
        analytics.ms((e.data->>'renewalDate')::bigint), e.seq,
        (e.data->>'renewalPrice')::bigint, e.data->>'currency', (e.data->>'offerType')::bigint,
        e.data->>'offerDiscountType', e.data->>'offerPeriod', e.data->>'offerIdentifier',
        analytics.offer_ids(e.data->>'eligibleWinBackOfferIds'), e.data->>'appAccountToken', e.data->>'appTransactionId'
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'RenewalInfoRecorded'
    ORDER BY e.data->>'originalTransactionId', (e.data->>'signedDate')::bigint DESC, e.seq DESC
    ON CONFLICT (original_transaction_id) DO UPDATE SET
        product_id = excluded.product_id, auto_renew_product_id = excluded.auto_renew_product_id,
        auto_renew_status = excluded.auto_renew_status, is_in_billing_retry = excluded.is_in_billing_retry,
        grace_period_expires_date = excluded.grace_period_expires_date,
        expiration_intent = excluded.expiration_intent, signed_date = excluded.signed_date,
        environment = excluded.environment, renewal_date = excluded.renewal_date, seq = excluded.seq,
        renewal_price_milli = excluded.renewal_price_milli, currency = excluded.currency,
        offer_type = excluded.offer_type, offer_discount_type = excluded.offer_discount_type,
        offer_period = excluded.offer_period, offer_identifier = excluded.offer_identifier,
        eligible_win_back_offer_ids = excluded.eligible_win_back_offer_ids,
        app_account_token = excluded.app_account_token, app_transaction_id = excluded.app_transaction_id
    WHERE excluded.signed_date >= r.signed_date;

    INSERT INTO analytics.chain_owners AS o
    SELECT DISTINCT ON (e.data->>'originalTransactionId')
        e.data->>'originalTransactionId', e.data->>'userId', analytics.ms((e.data->>'at')::bigint), e.seq
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'ChainClaimed'
    ORDER BY e.data->>'originalTransactionId', e.tx DESC, e.seq DESC
    ON CONFLICT (original_transaction_id) DO UPDATE SET
        user_id = excluded.user_id, claimed_at = excluded.claimed_at, seq = excluded.seq;

    INSERT INTO analytics.notifications
    SELECT DISTINCT ON (e.data->>'notificationUUID')
        e.data->>'notificationUUID', e.data->>'notificationType', e.data->>'subtype',
        analytics.ms((e.data->>'signedDate')::bigint), e.data->>'environment', e.data->>'originalTransactionId',
        e.data->>'transactionId', e.recorded_at, e.seq
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'NotificationReceived'
    ORDER BY e.data->>'notificationUUID', e.seq
    ON CONFLICT (notification_uuid) DO NOTHING;

    INSERT INTO analytics.balance_movements
    SELECT e.seq, e.data->>'userId', e.data->>'currency',
        CASE e.type WHEN 'BalanceDebited' THEN 'debit' ELSE 'credit' END,
        CASE e.type WHEN 'BalanceDebited' THEN -(e.data->>'amount')::bigint ELSE (e.data->>'amount')::bigint END,
        e.data->>'idempotencyKey', e.data->>'reason', (e.data->>'balanceAfter')::bigint,
        analytics.ms((e.data->>'at')::bigint)
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq)
      AND e.type IN ('BalanceDebited', 'BalanceCredited')
    ON CONFLICT (seq) DO NOTHING;

    INSERT INTO es.checkpoints (name, tx, seq, updated_at) VALUES ('analytics', l_tx, l_seq, now())
    ON CONFLICT ON CONSTRAINT checkpoints_pkey DO UPDATE SET tx = excluded.tx, seq = excluded.seq, updated_at = now();
    RETURN n;
END $$;
COMMENT ON FUNCTION analytics.catch_up(integer) IS 'Applies the next batch of events to the analytics tables and moves the analytics checkpoint (run by the service).';

GRANT EXECUTE ON FUNCTION analytics.offer_ids(text), analytics.offer_type_name(bigint),
    analytics.billing_period(text, text, numeric, text) TO iap_analyst, iap_ledger_service;
GRANT SELECT ON analytics.offer_types, analytics.offer_discount_types TO iap_analyst, iap_ledger_service;
