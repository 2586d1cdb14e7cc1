-- Money you can quote (api.md §3.1), fourth step: one reporting currency. `iap-ledger fx import
-- --base USD FILE.csv` records daily rates as events (ExchangeRatesRecorded, stream fx); they are
-- projected here, and analytics.fx_rate is the one rule that picks the rate of an amount: the
-- latest on or before its day, the newest recorded winning for a day, among those recorded by an
-- instant (the overview's asOf). A currency without one gets NULL: never guessed.

CREATE TABLE analytics.exchange_rates (
    seq         BIGINT NOT NULL,
    base        TEXT NOT NULL,
    day         DATE NOT NULL,
    currency    TEXT NOT NULL,
    rate        NUMERIC NOT NULL CHECK (rate > 0),
    recorded_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (seq, currency, day)
);
CREATE INDEX exchange_rates_lookup_idx ON analytics.exchange_rates (base, currency, day DESC, seq DESC);
COMMENT ON TABLE analytics.exchange_rates IS 'Daily exchange rates into a reporting currency, as imported (iap-ledger fx import); a later import of the same day and currency wins.';
COMMENT ON COLUMN analytics.exchange_rates.seq IS 'The event that recorded it (the newest wins for a day and currency).';
COMMENT ON COLUMN analytics.exchange_rates.base IS 'The reporting currency (--base).';
COMMENT ON COLUMN analytics.exchange_rates.day IS 'The UTC day the rate is of.';
COMMENT ON COLUMN analytics.exchange_rates.currency IS 'ISO 4217 currency converted.';
COMMENT ON COLUMN analytics.exchange_rates.rate IS 'Units of base one unit of currency was worth that day.';
COMMENT ON COLUMN analytics.exchange_rates.recorded_at IS 'When it was imported (the overview''s asOf takes the rates recorded by then).';

CREATE FUNCTION analytics.fx_rate(p_base text, p_currency text, p_day date, p_as_of timestamptz DEFAULT 'infinity')
RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT CASE WHEN p_currency = p_base THEN 1::numeric ELSE (
        SELECT r.rate FROM analytics.exchange_rates r
        WHERE r.base = p_base AND r.currency = p_currency AND r.day <= p_day AND r.recorded_at <= p_as_of
        ORDER BY r.day DESC, r.seq DESC LIMIT 1) END
$$;
COMMENT ON FUNCTION analytics.fx_rate(text, text, date, timestamptz) IS 'The rate converting currency into base for an amount of a day: 1 for the base itself, else the latest rate on or before the day among those recorded by as_of (the newest import winning); NULL: none.';

-- catch_up again, once for the three money migrations (0021 wrote it): it keeps
-- transactions.offer_discount_type (0036) and revocation_percentage (0037, each appended last, as
-- its column), every transaction version (0037) and the exchange rates (0039). Until this runs the
-- older definition fills the new columns with NULL; no database runs catch_up in between (they
-- apply together at start).
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
        (e.data->>'revocationPercentage')::bigint, e.data->>'environment', e.recorded_at
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

GRANT SELECT ON analytics.exchange_rates TO iap_analyst;
GRANT SELECT, INSERT, DELETE ON analytics.exchange_rates TO iap_ledger_service;
GRANT EXECUTE ON FUNCTION analytics.fx_rate(text, text, date, timestamptz) TO iap_analyst, iap_ledger_service;
