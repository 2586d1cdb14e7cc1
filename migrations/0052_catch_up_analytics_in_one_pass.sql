-- analytics.catch_up in one statement (issue 39). Until now each of its eight INSERTs read its
-- events from es.events again, bounded by the batch's (tx, seq) range and its event type. Inside
-- PL/pgSQL those statements run on cached generic plans, and with the bounds as parameters the
-- planner took the partial index of the event type (`events_transaction_id_idx`) and filtered the
-- range: every call read every TransactionRecorded of the whole log. A round's cost grew with
-- the log, not with the batch (300,000 events of log: 96 ms per call, 116 µs per event at a
-- batch of 1,000). Now the batch is read once, in (tx, seq) order with its LIMIT (the plan that
-- walks `events_tx_seq_idx` from the checkpoint, whatever the parameters), and the eight INSERTs
-- are data-modifying CTEs over it. Each INSERT keeps its select list, order and conflict rule
-- from 0049; they write eight different tables, so running in one statement (one snapshot, none
-- seeing another's rows) changes nothing they read.
CREATE OR REPLACE FUNCTION analytics.catch_up(p_limit integer DEFAULT 20000) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    c_tx xid8 := '0'; c_seq bigint := 0; l_tx xid8; l_seq bigint; n integer;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT c.tx, c.seq INTO c_tx, c_seq FROM es.checkpoints c WHERE c.name = 'analytics' FOR UPDATE;
    IF NOT FOUND THEN c_tx := '0'; c_seq := 0; END IF;

    WITH batch AS MATERIALIZED (
        SELECT e.tx, e.seq, e.type, e.data, e.recorded_at FROM es.events e
        WHERE (e.tx, e.seq) > (c_tx, c_seq) AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.tx, e.seq LIMIT p_limit
    ),
    transactions AS (
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
        FROM batch e
        WHERE e.type = 'TransactionRecorded'
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
           >= (t.signed_date, coalesce(t.revocation_date, '-infinity'), coalesce(t.expires_date, '-infinity'))
    ),
    -- Every version of every transaction, as recorded: what revenue_movements reads refunds and
    -- their reversals from (the newest version alone cannot say a refund was reversed).
    transaction_versions AS (
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
        FROM batch e
        WHERE e.type = 'TransactionRecorded'
        ON CONFLICT (seq) DO NOTHING
    ),
    -- Exchange rates into a reporting currency (iap-ledger fx import), one row per day and currency.
    exchange_rates AS (
        INSERT INTO analytics.exchange_rates
        SELECT e.seq, e.data->>'base', (r.value->>'date')::date, r.value->>'currency', (r.value->>'rate')::numeric,
            e.recorded_at
        FROM batch e CROSS JOIN LATERAL jsonb_array_elements(e.data->'rates') AS r(value)
        WHERE e.type = 'ExchangeRatesRecorded'
        ON CONFLICT DO NOTHING
    ),
    -- Every version of every renewal info, as recorded: grace and billing retry as of an instant.
    renewal_info_versions AS (
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
        FROM batch e
        WHERE e.type = 'RenewalInfoRecorded'
        ON CONFLICT (seq) DO NOTHING
    ),
    renewal_infos AS (
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
        FROM batch e
        WHERE e.type = 'RenewalInfoRecorded'
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
        WHERE excluded.signed_date >= r.signed_date
    ),
    chain_owners AS (
        INSERT INTO analytics.chain_owners AS o
        SELECT DISTINCT ON (e.data->>'originalTransactionId')
            e.data->>'originalTransactionId', identity.user_of(e.data->>'userId'), analytics.ms((e.data->>'at')::bigint), e.seq
        FROM batch e
        WHERE e.type = 'ChainClaimed'
        ORDER BY e.data->>'originalTransactionId', e.tx DESC, e.seq DESC
        ON CONFLICT (original_transaction_id) DO UPDATE SET
            user_id = excluded.user_id, claimed_at = excluded.claimed_at, seq = excluded.seq
    ),
    notifications AS (
        INSERT INTO analytics.notifications
        SELECT DISTINCT ON (e.data->>'notificationUUID')
            e.data->>'notificationUUID', e.data->>'notificationType', e.data->>'subtype',
            analytics.ms((e.data->>'signedDate')::bigint), e.data->>'environment', e.data->>'originalTransactionId',
            e.data->>'transactionId', e.recorded_at, e.seq
        FROM batch e
        WHERE e.type = 'NotificationReceived'
        ORDER BY e.data->>'notificationUUID', e.seq
        ON CONFLICT (notification_uuid) DO NOTHING
    ),
    balance_movements AS (
        INSERT INTO analytics.balance_movements
        SELECT e.seq, identity.user_of(e.data->>'userId'), e.data->>'currency',
            CASE e.type WHEN 'BalanceDebited' THEN 'debit' ELSE 'credit' END,
            CASE e.type WHEN 'BalanceDebited' THEN -(e.data->>'amount')::bigint ELSE (e.data->>'amount')::bigint END,
            e.data->>'idempotencyKey', e.data->>'reason', (e.data->>'balanceAfter')::bigint,
            analytics.ms((e.data->>'at')::bigint)
        FROM batch e
        WHERE e.type IN ('BalanceDebited', 'BalanceCredited')
        ON CONFLICT (seq) DO NOTHING
    )
    SELECT b.tx, b.seq, count(*) OVER ()::integer INTO l_tx, l_seq, n
    FROM batch b ORDER BY b.tx DESC, b.seq DESC LIMIT 1;
    IF NOT FOUND THEN RETURN 0; END IF;

    INSERT INTO es.checkpoints (name, tx, seq, updated_at) VALUES ('analytics', l_tx, l_seq, now())
    ON CONFLICT ON CONSTRAINT checkpoints_pkey DO UPDATE SET tx = excluded.tx, seq = excluded.seq, updated_at = now();
    RETURN n;
END $$;
COMMENT ON FUNCTION analytics.catch_up(integer) IS 'Applies the next batch of events to the analytics tables and moves the analytics checkpoint (run by the service).';
