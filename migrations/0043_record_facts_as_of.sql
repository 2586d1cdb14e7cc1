-- Money you can quote (api.md §3.1), fifth step: the overview's asOf covers the facts, not only
-- the exchange rates. "asOf=T shows the figures as they were reported then (the rates and events
-- recorded up to that instant)": a refund, a renewal or a purchase recorded after T must not
-- change what asOf=T answers. The projection keeps, next to the newest version of each
-- transaction and renewal info, every version with the instant the ledger recorded it, and
-- three functions give the facts as they stood at an instant:
--   analytics.transactions_as_of(T), analytics.renewal_infos_as_of(T) (shaped as the tables)
--   and analytics.revenue_movements_as_of(T) (shaped as the view).
-- The tables and views without asOf are untouched, so the common path costs what it did.

-- Every column of analytics.transactions on each version, so the newest version as of an
-- instant can be rebuilt. Filled for the versions already there from the event each one is
-- (its seq), as 0036 and 0037 did: no rebuild.
ALTER TABLE analytics.transaction_versions
    ADD COLUMN product_id TEXT, ADD COLUMN bundle_id TEXT, ADD COLUMN type TEXT,
    ADD COLUMN purchase_date TIMESTAMPTZ, ADD COLUMN original_purchase_date TIMESTAMPTZ,
    ADD COLUMN quantity BIGINT, ADD COLUMN ownership_type TEXT, ADD COLUMN revocation_reason BIGINT,
    ADD COLUMN is_upgraded BOOLEAN, ADD COLUMN offer_type BIGINT, ADD COLUMN offer_identifier TEXT,
    ADD COLUMN transaction_reason TEXT, ADD COLUMN web_order_line_item_id TEXT, ADD COLUMN price_milli BIGINT,
    ADD COLUMN currency TEXT, ADD COLUMN storefront TEXT, ADD COLUMN offer_discount_type TEXT;
UPDATE analytics.transaction_versions v SET
    product_id = e.data->>'productId', bundle_id = e.data->>'bundleId', type = e.data->>'type',
    purchase_date = analytics.ms((e.data->>'purchaseDate')::bigint),
    original_purchase_date = analytics.ms((e.data->>'originalPurchaseDate')::bigint),
    quantity = coalesce((e.data->>'quantity')::bigint, 1),
    ownership_type = coalesce(e.data->>'inAppOwnershipType', 'PURCHASED'),
    revocation_reason = (e.data->>'revocationReason')::bigint,
    is_upgraded = coalesce((e.data->>'isUpgraded')::boolean, false), offer_type = (e.data->>'offerType')::bigint,
    offer_identifier = e.data->>'offerIdentifier', transaction_reason = e.data->>'transactionReason',
    web_order_line_item_id = e.data->>'webOrderLineItemId', price_milli = (e.data->>'price')::numeric::bigint,
    currency = e.data->>'currency', storefront = e.data->>'storefront', offer_discount_type = e.data->>'offerDiscountType'
FROM es.events e WHERE e.seq = v.seq;
COMMENT ON COLUMN analytics.transaction_versions.product_id IS 'App Store product identifier (this version''s, as analytics.transactions; migration 0043).';
COMMENT ON COLUMN analytics.transaction_versions.bundle_id IS 'The app''s bundle identifier.';
COMMENT ON COLUMN analytics.transaction_versions.type IS 'Auto-Renewable Subscription, Non-Renewing Subscription, Consumable or Non-Consumable.';
COMMENT ON COLUMN analytics.transaction_versions.purchase_date IS 'When this transaction (period) was bought or renewed.';
COMMENT ON COLUMN analytics.transaction_versions.original_purchase_date IS 'Purchase date of the chain''s original transaction.';
COMMENT ON COLUMN analytics.transaction_versions.quantity IS 'Units bought (consumables).';
COMMENT ON COLUMN analytics.transaction_versions.ownership_type IS 'PURCHASED or FAMILY_SHARED.';
COMMENT ON COLUMN analytics.transaction_versions.revocation_reason IS '0 other, 1 app issue.';
COMMENT ON COLUMN analytics.transaction_versions.is_upgraded IS 'Upgraded to another subscription of the group.';
COMMENT ON COLUMN analytics.transaction_versions.offer_type IS '1 introductory, 2 promotional, 3 offer code, 4 win-back.';
COMMENT ON COLUMN analytics.transaction_versions.offer_identifier IS 'Promotional offer or offer code id.';
COMMENT ON COLUMN analytics.transaction_versions.transaction_reason IS 'PURCHASE or RENEWAL.';
COMMENT ON COLUMN analytics.transaction_versions.web_order_line_item_id IS 'Apple''s id of the subscription period.';
COMMENT ON COLUMN analytics.transaction_versions.price_milli IS 'Price paid in milliunits of currency.';
COMMENT ON COLUMN analytics.transaction_versions.currency IS 'ISO 4217 currency of the price.';
COMMENT ON COLUMN analytics.transaction_versions.storefront IS 'App Store country (ISO 3166-1 alpha-3).';
COMMENT ON COLUMN analytics.transaction_versions.offer_discount_type IS 'Apple offerDiscountType: FREE_TRIAL, PAY_AS_YOU_GO, PAY_UP_FRONT; NULL without an offer.';

-- Every recorded version of every renewal info (one RenewalInfoRecorded event each), with when
-- the ledger recorded it: grace periods and billing retry as they were reported at an instant.
CREATE TABLE analytics.renewal_info_versions (
    seq                       BIGINT PRIMARY KEY,
    original_transaction_id   TEXT NOT NULL,
    product_id                TEXT,
    auto_renew_product_id     TEXT,
    auto_renew_status         BOOLEAN,
    is_in_billing_retry       BOOLEAN,
    grace_period_expires_date TIMESTAMPTZ,
    expiration_intent         BIGINT,
    signed_date               TIMESTAMPTZ NOT NULL,
    environment               TEXT,
    renewal_date              TIMESTAMPTZ,
    recorded_at               TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE analytics.renewal_info_versions IS 'Every recorded version of a renewal info (one per RenewalInfoRecorded event), with when it was recorded; analytics.renewal_infos keeps the newest.';
COMMENT ON COLUMN analytics.renewal_info_versions.seq IS 'The event''s position in the log.';
COMMENT ON COLUMN analytics.renewal_info_versions.original_transaction_id IS 'The subscription chain.';
COMMENT ON COLUMN analytics.renewal_info_versions.product_id IS 'Product of the current period.';
COMMENT ON COLUMN analytics.renewal_info_versions.auto_renew_product_id IS 'Product the next period renews into.';
COMMENT ON COLUMN analytics.renewal_info_versions.auto_renew_status IS 'True while the subscription will renew.';
COMMENT ON COLUMN analytics.renewal_info_versions.is_in_billing_retry IS 'True while Apple retries a failed charge.';
COMMENT ON COLUMN analytics.renewal_info_versions.grace_period_expires_date IS 'End of the billing grace period, if any.';
COMMENT ON COLUMN analytics.renewal_info_versions.expiration_intent IS '1 cancelled, 2 billing error, 3 no price-increase consent, 4 product unavailable, 5 other.';
COMMENT ON COLUMN analytics.renewal_info_versions.signed_date IS 'When Apple signed this renewal info.';
COMMENT ON COLUMN analytics.renewal_info_versions.environment IS 'Production, Sandbox, Xcode or LocalTesting.';
COMMENT ON COLUMN analytics.renewal_info_versions.renewal_date IS 'Next renewal date announced by Apple.';
COMMENT ON COLUMN analytics.renewal_info_versions.recorded_at IS 'When the ledger recorded this version.';
-- The versions already projected (up to the checkpoint); those past it are catch_up's.
INSERT INTO analytics.renewal_info_versions
SELECT e.seq, e.data->>'originalTransactionId', e.data->>'productId', e.data->>'autoRenewProductId',
    (e.data->>'autoRenewStatus')::integer = 1, (e.data->>'isInBillingRetryPeriod')::boolean,
    analytics.ms((e.data->>'gracePeriodExpiresDate')::bigint), (e.data->>'expirationIntent')::bigint,
    analytics.ms((e.data->>'signedDate')::bigint), e.data->>'environment',
    analytics.ms((e.data->>'renewalDate')::bigint), e.recorded_at
FROM es.events e, es.checkpoints c
WHERE c.name = 'analytics' AND e.type = 'RenewalInfoRecorded' AND (e.tx, e.seq) <= (c.tx, c.seq);

-- The transactions as they stood at p_as_of: of each transaction's versions recorded by then,
-- the one analytics.transactions would have kept (newest signedDate, then revocationDate, then
-- expiresDate, then the later event). Shaped as analytics.transactions.
CREATE FUNCTION analytics.transactions_as_of(p_as_of timestamptz) RETURNS SETOF analytics.transactions
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT DISTINCT ON (v.transaction_id)
        v.transaction_id, v.original_transaction_id, v.product_id, v.bundle_id, v.type, v.purchase_date,
        v.original_purchase_date, v.expires_date, v.quantity, v.ownership_type, v.signed_date, v.revocation_date,
        v.revocation_reason, v.revocation_type, v.is_upgraded, v.offer_type, v.offer_identifier, v.environment,
        v.transaction_reason, v.web_order_line_item_id, v.price_milli, v.currency, v.storefront,
        min(v.recorded_at) OVER (PARTITION BY v.transaction_id), v.recorded_at, v.seq, v.offer_discount_type,
        v.revocation_percentage
    FROM analytics.transaction_versions v
    WHERE v.recorded_at <= p_as_of
    ORDER BY v.transaction_id, v.signed_date DESC, coalesce(v.revocation_date, '-infinity') DESC,
        coalesce(v.expires_date, '-infinity') DESC, v.seq DESC
$$;
COMMENT ON FUNCTION analytics.transactions_as_of(timestamptz) IS 'analytics.transactions as it stood at an instant: of the versions recorded by then, the one the table keeps (newest signed).';

-- The renewal infos as they stood at p_as_of (newest signedDate among those recorded by then).
CREATE FUNCTION analytics.renewal_infos_as_of(p_as_of timestamptz) RETURNS SETOF analytics.renewal_infos
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT DISTINCT ON (v.original_transaction_id)
        v.original_transaction_id, v.product_id, v.auto_renew_product_id, v.auto_renew_status, v.is_in_billing_retry,
        v.grace_period_expires_date, v.expiration_intent, v.signed_date, v.environment, v.renewal_date, v.seq
    FROM analytics.renewal_info_versions v
    WHERE v.recorded_at <= p_as_of
    ORDER BY v.original_transaction_id, v.signed_date DESC, v.seq DESC
$$;
COMMENT ON FUNCTION analytics.renewal_infos_as_of(timestamptz) IS 'analytics.renewal_infos as it stood at an instant: the newest signed version recorded by then, per chain.';

-- analytics.revenue_movements as it stood at p_as_of: the same rules (migration 0037; this body
-- is that view's, word for word, but for its two sources) over the transactions as of then and
-- the versions recorded by then. Commission follows analytics.apps and billing periods
-- analytics.products as configured now, and user_id is the chain's owner now, as in the view.
CREATE FUNCTION analytics.revenue_movements_as_of(p_as_of timestamptz) RETURNS SETOF analytics.revenue_movements
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    WITH paid AS (
        SELECT t.transaction_id, t.original_transaction_id, t.purchase_date, t.expires_date,
            extract(epoch FROM t.expires_date - t.purchase_date) AS seconds, b.seconds AS nominal
        FROM analytics.transactions_as_of(p_as_of) t
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
COMMENT ON FUNCTION analytics.revenue_movements_as_of(timestamptz) IS 'analytics.revenue_movements as it stood at an instant: the charges and refunds of the transaction versions recorded by then (commission and billing periods as configured now).';

-- catch_up again (its one current definition was 0039's; this is that copy with two changes):
-- every transaction version now carries all of the transaction's columns, and every renewal
-- info version is kept with when it was recorded.
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
        (e.data->>'revocationPercentage')::bigint
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
        offer_discount_type = excluded.offer_discount_type, revocation_percentage = excluded.revocation_percentage
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
        e.data->>'currency', e.data->>'storefront', e.data->>'offerDiscountType'
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
        analytics.ms((e.data->>'renewalDate')::bigint), e.recorded_at
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'RenewalInfoRecorded'
    ON CONFLICT (seq) DO NOTHING;

    INSERT INTO analytics.renewal_infos AS r
    SELECT DISTINCT ON (e.data->>'originalTransactionId')
        e.data->>'originalTransactionId', e.data->>'productId', e.data->>'autoRenewProductId',
        (e.data->>'autoRenewStatus')::integer = 1, (e.data->>'isInBillingRetryPeriod')::boolean,
        analytics.ms((e.data->>'gracePeriodExpiresDate')::bigint), (e.data->>'expirationIntent')::bigint,
        analytics.ms((e.data->>'signedDate')::bigint), e.data->>'environment',
        analytics.ms((e.data->>'renewalDate')::bigint), e.seq
    FROM es.events e
    WHERE (e.tx, e.seq) > (c_tx, c_seq) AND (e.tx, e.seq) <= (l_tx, l_seq) AND e.type = 'RenewalInfoRecorded'
    ORDER BY e.data->>'originalTransactionId', (e.data->>'signedDate')::bigint DESC, e.seq DESC
    ON CONFLICT (original_transaction_id) DO UPDATE SET
        product_id = excluded.product_id, auto_renew_product_id = excluded.auto_renew_product_id,
        auto_renew_status = excluded.auto_renew_status, is_in_billing_retry = excluded.is_in_billing_retry,
        grace_period_expires_date = excluded.grace_period_expires_date,
        expiration_intent = excluded.expiration_intent, signed_date = excluded.signed_date,
        environment = excluded.environment, renewal_date = excluded.renewal_date, seq = excluded.seq
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

GRANT SELECT ON analytics.renewal_info_versions TO iap_analyst;
GRANT SELECT, INSERT, DELETE ON analytics.renewal_info_versions TO iap_ledger_service;
GRANT EXECUTE ON FUNCTION analytics.transactions_as_of(timestamptz), analytics.renewal_infos_as_of(timestamptz),
    analytics.revenue_movements_as_of(timestamptz) TO iap_analyst, iap_ledger_service;
