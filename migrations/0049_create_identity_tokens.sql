-- Token subjects (docs/architecture.md, "Erasure on an append-only log", step 2; api.md §7): an
-- appAccountToken is chosen by the app for a person, often derived from its own user id, so
-- the log keeps it only as an opaque token subject (`t_` and 128 random bits) and seals the
-- signed payloads that carry it with that token's key. This table is the only place a token is
-- kept with its subject and key; erasing its person deletes the row.
--
-- Facts recorded before this migration keep their tokens and payloads in clear (the log
-- migration of a later step seals them); `identity.token_of` gives a stored token back either way.
SET ROLE iap_ledger_service;

CREATE TABLE identity.tokens (
    token      TEXT PRIMARY KEY,
    subject    TEXT NOT NULL UNIQUE,
    key        BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT tokens_key_length CHECK (octet_length(key) = 32)
);
COMMENT ON TABLE identity.tokens IS 'Each appAccountToken''s opaque subject (how the log names it) and the key sealing the payloads that carry it; deleted by erasure.';

-- The token a stored appAccountToken names: a token subject's token, or the value itself (a
-- token stored in clear before this migration, or the subject of an erased person's token).
CREATE FUNCTION identity.token_of(p_stored text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce((SELECT t.token FROM identity.tokens t WHERE t.subject = p_stored), p_stored)
$$;

RESET ROLE;

-- catch_up again (its one current definition was 0047's; this is that copy with one change):
-- renewal infos show the token behind a token subject.
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
        analytics.offer_ids(e.data->>'eligibleWinBackOfferIds'), identity.token_of(e.data->>'appAccountToken'),
        e.data->>'appTransactionId'
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
        analytics.offer_ids(e.data->>'eligibleWinBackOfferIds'), identity.token_of(e.data->>'appAccountToken'),
        e.data->>'appTransactionId'
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
        e.data->>'originalTransactionId', identity.user_of(e.data->>'userId'), analytics.ms((e.data->>'at')::bigint), e.seq
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
    SELECT e.seq, identity.user_of(e.data->>'userId'), e.data->>'currency',
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
