-- The analysts' schema: plain tables kept current by an asynchronous catch-up projector
-- (analytics.catch_up, run by the service on a background thread), and views on top of them.
-- Column documentation lives in COMMENT ON below and in docs/analytics.md.
CREATE SCHEMA analytics;
COMMENT ON SCHEMA analytics IS 'Read-only projections of the iap-ledger event log for analysts (role iap_analyst). Times are timestamptz (UTC); prices are milliunits of the currency.';

-- Milliseconds since the epoch (the ledger's unit) to timestamptz.
CREATE FUNCTION analytics.ms(bigint) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT to_timestamp($1 / 1000.0) $$;

CREATE TABLE analytics.transactions (
    transaction_id          TEXT PRIMARY KEY,
    original_transaction_id TEXT NOT NULL,
    product_id              TEXT NOT NULL,
    bundle_id               TEXT NOT NULL,
    type                    TEXT NOT NULL,
    purchase_date           TIMESTAMPTZ NOT NULL,
    original_purchase_date  TIMESTAMPTZ,
    expires_date            TIMESTAMPTZ,
    quantity                BIGINT NOT NULL,
    ownership_type          TEXT NOT NULL,
    signed_date             TIMESTAMPTZ NOT NULL,
    revocation_date         TIMESTAMPTZ,
    revocation_reason       BIGINT,
    revocation_type         TEXT,
    is_upgraded             BOOLEAN NOT NULL,
    offer_type              BIGINT,
    offer_identifier        TEXT,
    environment             TEXT NOT NULL,
    transaction_reason      TEXT,
    web_order_line_item_id  TEXT,
    price_milli             BIGINT,
    currency                TEXT,
    storefront              TEXT,
    first_recorded_at       TIMESTAMPTZ NOT NULL,
    last_recorded_at        TIMESTAMPTZ NOT NULL,
    seq                     BIGINT NOT NULL
);
CREATE INDEX transactions_original_transaction_id_idx ON analytics.transactions (original_transaction_id);
CREATE INDEX transactions_purchase_date_idx ON analytics.transactions (purchase_date);
COMMENT ON TABLE analytics.transactions IS 'One row per App Store transaction: its latest signed version (newest signedDate wins; a refund or extension re-signs it).';
COMMENT ON COLUMN analytics.transactions.transaction_id IS 'Apple transactionId.';
COMMENT ON COLUMN analytics.transactions.original_transaction_id IS 'Apple originalTransactionId: the subscription chain (or the purchase itself for one-off products).';
COMMENT ON COLUMN analytics.transactions.product_id IS 'App Store product identifier.';
COMMENT ON COLUMN analytics.transactions.bundle_id IS 'The app''s bundle identifier.';
COMMENT ON COLUMN analytics.transactions.type IS 'Apple type: Auto-Renewable Subscription, Non-Renewing Subscription, Consumable, Non-Consumable.';
COMMENT ON COLUMN analytics.transactions.purchase_date IS 'When this transaction (period) was purchased or renewed.';
COMMENT ON COLUMN analytics.transactions.original_purchase_date IS 'Purchase date of the original transaction of the chain.';
COMMENT ON COLUMN analytics.transactions.expires_date IS 'End of the period (subscriptions); NULL for other types.';
COMMENT ON COLUMN analytics.transactions.quantity IS 'Units bought (consumables).';
COMMENT ON COLUMN analytics.transactions.ownership_type IS 'PURCHASED or FAMILY_SHARED.';
COMMENT ON COLUMN analytics.transactions.signed_date IS 'When Apple signed the version kept here.';
COMMENT ON COLUMN analytics.transactions.revocation_date IS 'When Apple refunded or revoked it; NULL while it stands.';
COMMENT ON COLUMN analytics.transactions.revocation_reason IS 'Apple revocationReason: 0 other, 1 app issue.';
COMMENT ON COLUMN analytics.transactions.revocation_type IS 'REFUND_FULL, REFUND_PRORATED or FAMILY_REVOKE.';
COMMENT ON COLUMN analytics.transactions.is_upgraded IS 'True when the user upgraded to another subscription of the group (this one then grants nothing).';
COMMENT ON COLUMN analytics.transactions.offer_type IS 'Apple offerType: 1 introductory, 2 promotional, 3 offer code, 4 win-back.';
COMMENT ON COLUMN analytics.transactions.offer_identifier IS 'The promotional offer or offer code identifier.';
COMMENT ON COLUMN analytics.transactions.environment IS 'Production or Sandbox.';
COMMENT ON COLUMN analytics.transactions.transaction_reason IS 'PURCHASE or RENEWAL.';
COMMENT ON COLUMN analytics.transactions.web_order_line_item_id IS 'Apple webOrderLineItemId (one per subscription period).';
COMMENT ON COLUMN analytics.transactions.price_milli IS 'Price paid in milliunits of currency (9990 = 9.99).';
COMMENT ON COLUMN analytics.transactions.currency IS 'ISO 4217 currency of price_milli.';
COMMENT ON COLUMN analytics.transactions.storefront IS 'App Store country (ISO 3166-1 alpha-3).';
COMMENT ON COLUMN analytics.transactions.first_recorded_at IS 'When the ledger first recorded this transaction.';
COMMENT ON COLUMN analytics.transactions.last_recorded_at IS 'When the version kept here was recorded.';
COMMENT ON COLUMN analytics.transactions.seq IS 'Event-log sequence number of the version kept here.';

CREATE TABLE analytics.renewal_infos (
    original_transaction_id   TEXT PRIMARY KEY,
    product_id                TEXT,
    auto_renew_product_id     TEXT,
    auto_renew_status         BOOLEAN,
    is_in_billing_retry       BOOLEAN,
    grace_period_expires_date TIMESTAMPTZ,
    expiration_intent         BIGINT,
    signed_date               TIMESTAMPTZ NOT NULL,
    environment               TEXT,
    renewal_date              TIMESTAMPTZ,
    seq                       BIGINT NOT NULL
);
COMMENT ON TABLE analytics.renewal_infos IS 'The newest renewal info (by signed_date) of each subscription chain.';
COMMENT ON COLUMN analytics.renewal_infos.original_transaction_id IS 'The subscription chain.';
COMMENT ON COLUMN analytics.renewal_infos.product_id IS 'Product of the current period.';
COMMENT ON COLUMN analytics.renewal_infos.auto_renew_product_id IS 'Product the next period renews into.';
COMMENT ON COLUMN analytics.renewal_infos.auto_renew_status IS 'True while the subscription will renew.';
COMMENT ON COLUMN analytics.renewal_infos.is_in_billing_retry IS 'True while Apple retries a failed charge.';
COMMENT ON COLUMN analytics.renewal_infos.grace_period_expires_date IS 'End of the billing grace period, if any.';
COMMENT ON COLUMN analytics.renewal_infos.expiration_intent IS '1 cancelled, 2 billing error, 3 no price-increase consent, 4 product unavailable, 5 other.';
COMMENT ON COLUMN analytics.renewal_infos.signed_date IS 'When Apple signed this renewal info.';
COMMENT ON COLUMN analytics.renewal_infos.environment IS 'Production or Sandbox.';
COMMENT ON COLUMN analytics.renewal_infos.renewal_date IS 'Next renewal date announced by Apple.';
COMMENT ON COLUMN analytics.renewal_infos.seq IS 'Event-log sequence number of this renewal info.';

CREATE TABLE analytics.chain_owners (
    original_transaction_id TEXT PRIMARY KEY,
    user_id                 TEXT NOT NULL,
    claimed_at              TIMESTAMPTZ NOT NULL,
    seq                     BIGINT NOT NULL
);
CREATE INDEX chain_owners_user_id_idx ON analytics.chain_owners (user_id);
COMMENT ON TABLE analytics.chain_owners IS 'Which user owns each transaction chain now (unclaimed chains have no row).';
COMMENT ON COLUMN analytics.chain_owners.original_transaction_id IS 'The chain.';
COMMENT ON COLUMN analytics.chain_owners.user_id IS 'The backend''s user id that claimed it last.';
COMMENT ON COLUMN analytics.chain_owners.claimed_at IS 'When that claim (or transfer) happened.';
COMMENT ON COLUMN analytics.chain_owners.seq IS 'Event-log sequence number of the claim.';

CREATE TABLE analytics.notifications (
    notification_uuid       TEXT PRIMARY KEY,
    notification_type       TEXT NOT NULL,
    subtype                 TEXT,
    signed_date             TIMESTAMPTZ NOT NULL,
    environment             TEXT,
    original_transaction_id TEXT,
    transaction_id          TEXT,
    received_at             TIMESTAMPTZ NOT NULL,
    seq                     BIGINT NOT NULL
);
CREATE INDEX notifications_received_at_idx ON analytics.notifications (received_at);
COMMENT ON TABLE analytics.notifications IS 'Every App Store Server Notification V2 received (redeliveries are not repeated).';
COMMENT ON COLUMN analytics.notifications.notification_uuid IS 'Apple notificationUUID.';
COMMENT ON COLUMN analytics.notifications.notification_type IS 'Apple notificationType (SUBSCRIBED, DID_RENEW, REFUND, EXPIRED, …).';
COMMENT ON COLUMN analytics.notifications.subtype IS 'Apple subtype (INITIAL_BUY, AUTO_RENEW_DISABLED, …), if any.';
COMMENT ON COLUMN analytics.notifications.signed_date IS 'When Apple signed the notification.';
COMMENT ON COLUMN analytics.notifications.environment IS 'Production or Sandbox.';
COMMENT ON COLUMN analytics.notifications.original_transaction_id IS 'The chain it is about (NULL for e.g. TEST).';
COMMENT ON COLUMN analytics.notifications.transaction_id IS 'The transaction it carried, if any.';
COMMENT ON COLUMN analytics.notifications.received_at IS 'When the ledger recorded it.';
COMMENT ON COLUMN analytics.notifications.seq IS 'Event-log sequence number.';

CREATE TABLE analytics.balance_movements (
    seq             BIGINT PRIMARY KEY,
    user_id         TEXT NOT NULL,
    currency        TEXT NOT NULL,
    kind            TEXT NOT NULL,
    amount          BIGINT NOT NULL,
    idempotency_key TEXT NOT NULL,
    reason          TEXT NOT NULL,
    balance_after   BIGINT,
    at              TIMESTAMPTZ NOT NULL
);
CREATE INDEX balance_movements_user_id_idx ON analytics.balance_movements (user_id, currency);
COMMENT ON TABLE analytics.balance_movements IS 'Debits (spending) and admin credits of virtual-currency balances, one row per event. Purchases and refunds of consumables are in the view balance_ledger.';
COMMENT ON COLUMN analytics.balance_movements.seq IS 'Event-log sequence number.';
COMMENT ON COLUMN analytics.balance_movements.user_id IS 'Whose balance.';
COMMENT ON COLUMN analytics.balance_movements.currency IS 'Balance name (coins, gems, …).';
COMMENT ON COLUMN analytics.balance_movements.kind IS 'debit or credit.';
COMMENT ON COLUMN analytics.balance_movements.amount IS 'Signed change: negative for debits.';
COMMENT ON COLUMN analytics.balance_movements.idempotency_key IS 'The caller''s idempotency key.';
COMMENT ON COLUMN analytics.balance_movements.reason IS 'The caller''s reason text.';
COMMENT ON COLUMN analytics.balance_movements.balance_after IS 'Balance answered right after a debit (NULL for credits).';
COMMENT ON COLUMN analytics.balance_movements.at IS 'When it happened.';

CREATE TABLE analytics.products (
    product_id   TEXT PRIMARY KEY,
    type         TEXT NOT NULL,
    entitlements TEXT[] NOT NULL,
    grants       JSONB NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
COMMENT ON TABLE analytics.products IS 'The configured product catalog, published by the service at start.';
COMMENT ON COLUMN analytics.products.product_id IS 'App Store product identifier.';
COMMENT ON COLUMN analytics.products.type IS 'consumable, non-consumable, subscription or non-renewing.';
COMMENT ON COLUMN analytics.products.entitlements IS 'Entitlements the product grants.';
COMMENT ON COLUMN analytics.products.grants IS 'Balance credits per unit bought, e.g. {"coins": 100}.';
COMMENT ON COLUMN analytics.products.updated_at IS 'When the service last published it.';

-- One catch-up step: folds up to p_limit events after the 'analytics' checkpoint (below the xid
-- horizon, in (tx, seq) order) into the tables above, set-based, and moves the checkpoint in the
-- same transaction. Returns the number of events applied (0: caught up).
CREATE FUNCTION analytics.catch_up(p_limit integer DEFAULT 20000) RETURNS integer
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
        e.data->>'storefront', e.recorded_at, e.recorded_at, e.seq
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
        last_recorded_at = excluded.last_recorded_at, seq = excluded.seq
    WHERE (excluded.signed_date, coalesce(excluded.revocation_date, '-infinity'), coalesce(excluded.expires_date, '-infinity'))
       >= (t.signed_date, coalesce(t.revocation_date, '-infinity'), coalesce(t.expires_date, '-infinity'));

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

-- Each user's rendered Customer document (proj.users), for the entitlement and balance views.
-- SECURITY DEFINER so analysts never need access to proj; resolved by name at every call, so a
-- replay that swaps proj.users in is followed.
CREATE FUNCTION analytics.user_documents()
RETURNS TABLE (user_id text, version bigint, document jsonb, rendered_at timestamptz, valid_until timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
    SELECT u.user_id, u.version, u.document::jsonb, to_timestamp(u.rendered_at / 1000.0),
           to_timestamp(u.valid_until / 1000.0)
    FROM proj.users u
$$;
REVOKE ALL ON FUNCTION analytics.user_documents() FROM PUBLIC;
REVOKE ALL ON FUNCTION analytics.catch_up(integer) FROM PUBLIC;

CREATE VIEW analytics.subscriptions AS
WITH current AS (
    SELECT DISTINCT ON (t.original_transaction_id) t.*
    FROM analytics.transactions t
    WHERE t.type IN ('Auto-Renewable Subscription', 'Non-Renewing Subscription') AND NOT t.is_upgraded
    ORDER BY t.original_transaction_id, t.expires_date DESC NULLS FIRST, t.purchase_date DESC, t.transaction_id DESC
), periods AS (
    SELECT t.original_transaction_id, count(*) AS periods, min(t.purchase_date) AS started_at
    FROM analytics.transactions t GROUP BY t.original_transaction_id
)
SELECT c.original_transaction_id, o.user_id, c.product_id, c.transaction_id AS current_transaction_id,
    CASE
        WHEN c.revocation_date IS NOT NULL THEN 'revoked'
        WHEN c.expires_date IS NOT NULL AND now() >= c.expires_date THEN
            CASE
                WHEN r.signed_date >= c.purchase_date AND now() < r.grace_period_expires_date THEN 'in_grace_period'
                WHEN r.signed_date >= c.purchase_date AND r.is_in_billing_retry THEN 'in_billing_retry'
                ELSE 'expired'
            END
        ELSE 'active'
    END AS status,
    p.started_at, c.purchase_date AS period_started_at, c.expires_date,
    CASE WHEN r.signed_date >= c.purchase_date THEN r.grace_period_expires_date END AS grace_period_expires_date,
    c.revocation_date, coalesce(r.auto_renew_status, false) AS auto_renew, r.auto_renew_product_id,
    c.environment, c.ownership_type, c.offer_type, p.periods, c.price_milli, c.currency
FROM current c
JOIN periods p USING (original_transaction_id)
LEFT JOIN analytics.renewal_infos r USING (original_transaction_id)
LEFT JOIN analytics.chain_owners o USING (original_transaction_id);
COMMENT ON VIEW analytics.subscriptions IS 'One row per subscription chain with its status judged now (same rules as the API).';
COMMENT ON COLUMN analytics.subscriptions.original_transaction_id IS 'The chain.';
COMMENT ON COLUMN analytics.subscriptions.user_id IS 'Owner (NULL while unclaimed).';
COMMENT ON COLUMN analytics.subscriptions.product_id IS 'Product of the current period.';
COMMENT ON COLUMN analytics.subscriptions.current_transaction_id IS 'Transaction of the current (latest-expiring, non-upgraded) period.';
COMMENT ON COLUMN analytics.subscriptions.status IS 'active, in_grace_period, in_billing_retry, expired or revoked, judged at query time.';
COMMENT ON COLUMN analytics.subscriptions.started_at IS 'First purchase of the chain.';
COMMENT ON COLUMN analytics.subscriptions.period_started_at IS 'Start of the current period.';
COMMENT ON COLUMN analytics.subscriptions.expires_date IS 'End of the current period.';
COMMENT ON COLUMN analytics.subscriptions.grace_period_expires_date IS 'End of the grace period (from a renewal info of the current period).';
COMMENT ON COLUMN analytics.subscriptions.revocation_date IS 'When the current period was refunded/revoked.';
COMMENT ON COLUMN analytics.subscriptions.auto_renew IS 'Whether it will renew (newest renewal info).';
COMMENT ON COLUMN analytics.subscriptions.auto_renew_product_id IS 'Product it renews into.';
COMMENT ON COLUMN analytics.subscriptions.environment IS 'Production or Sandbox.';
COMMENT ON COLUMN analytics.subscriptions.ownership_type IS 'PURCHASED or FAMILY_SHARED.';
COMMENT ON COLUMN analytics.subscriptions.offer_type IS 'Offer of the current period (1 intro, 2 promo, 3 code, 4 win-back).';
COMMENT ON COLUMN analytics.subscriptions.periods IS 'Transactions (periods) recorded for the chain.';
COMMENT ON COLUMN analytics.subscriptions.price_milli IS 'Price of the current period in milliunits.';
COMMENT ON COLUMN analytics.subscriptions.currency IS 'Currency of price_milli.';

CREATE VIEW analytics.entitlements AS
SELECT d.user_id, e.key AS entitlement,
    CASE
        WHEN d.valid_until IS NULL OR d.valid_until > now() THEN (e.value->>'active')::boolean
        ELSE (e.value->>'active')::boolean
             AND (e.value->>'expiresAt' IS NULL OR (e.value->>'expiresAt')::timestamptz > now())
    END AS active,
    (e.value->>'expiresAt')::timestamptz AS expires_at, e.value->>'productId' AS product_id,
    e.value->>'source' AS source, e.value->>'originalTransactionId' AS original_transaction_id,
    (e.value->>'willRenew')::boolean AS will_renew, (e.value->>'inGracePeriod')::boolean AS in_grace_period,
    d.rendered_at AS judged_at
FROM analytics.user_documents() d, jsonb_each(d.document->'entitlements') e;
COMMENT ON VIEW analytics.entitlements IS 'User × entitlement, from the same documents GET /v1/users/{id} serves.';
COMMENT ON COLUMN analytics.entitlements.user_id IS 'The user.';
COMMENT ON COLUMN analytics.entitlements.entitlement IS 'Entitlement name (pro, no_ads, …).';
COMMENT ON COLUMN analytics.entitlements.active IS 'Whether it gives access now (exact while the stored document is current; after valid_until, judged by expires_at).';
COMMENT ON COLUMN analytics.entitlements.expires_at IS 'When it lapses (NULL: no end).';
COMMENT ON COLUMN analytics.entitlements.product_id IS 'Product granting it.';
COMMENT ON COLUMN analytics.entitlements.source IS 'subscription, nonConsumable, nonRenewingSubscription or admin.';
COMMENT ON COLUMN analytics.entitlements.original_transaction_id IS 'Chain granting it.';
COMMENT ON COLUMN analytics.entitlements.will_renew IS 'Whether the granting subscription will renew.';
COMMENT ON COLUMN analytics.entitlements.in_grace_period IS 'Whether access comes from a billing grace period.';
COMMENT ON COLUMN analytics.entitlements.judged_at IS 'When the document was rendered.';

CREATE VIEW analytics.balances AS
SELECT d.user_id, b.key AS currency, (b.value #>> '{}')::bigint AS balance
FROM analytics.user_documents() d, jsonb_each(d.document->'balances') b;
COMMENT ON VIEW analytics.balances IS 'Current balance of each user and currency (may be negative after a refund of spent coins).';
COMMENT ON COLUMN analytics.balances.user_id IS 'The user.';
COMMENT ON COLUMN analytics.balances.currency IS 'Balance name.';
COMMENT ON COLUMN analytics.balances.balance IS 'Current amount.';

CREATE VIEW analytics.balance_ledger AS
WITH credits AS (
    SELECT o.user_id, g.key AS currency, (g.value #>> '{}')::bigint * greatest(t.quantity, 1) AS amount,
        t.purchase_date, t.revocation_date, t.transaction_id, t.product_id
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
    c.product_id, NULL::text AS idempotency_key, NULL::text AS reason
FROM credits c
UNION ALL
SELECT c.user_id, c.currency, 'refund', -c.amount, c.revocation_date, c.transaction_id, c.product_id, NULL, NULL
FROM credits c WHERE c.revocation_date IS NOT NULL
UNION ALL
SELECT m.user_id, m.currency, m.kind, m.amount, m.at, NULL, NULL, m.idempotency_key, m.reason
FROM analytics.balance_movements m;
COMMENT ON VIEW analytics.balance_ledger IS 'Every balance movement: consumable purchases (+), their refunds (−), debits (−) and admin credits (+). Sums per user and currency equal analytics.balances.';
COMMENT ON COLUMN analytics.balance_ledger.user_id IS 'The user.';
COMMENT ON COLUMN analytics.balance_ledger.currency IS 'Balance name.';
COMMENT ON COLUMN analytics.balance_ledger.kind IS 'purchase, refund, debit or credit.';
COMMENT ON COLUMN analytics.balance_ledger.amount IS 'Signed change of the balance.';
COMMENT ON COLUMN analytics.balance_ledger.at IS 'When it happened.';
COMMENT ON COLUMN analytics.balance_ledger.transaction_id IS 'The App Store transaction (purchases and refunds).';
COMMENT ON COLUMN analytics.balance_ledger.product_id IS 'The consumable bought (purchases and refunds).';
COMMENT ON COLUMN analytics.balance_ledger.idempotency_key IS 'The caller''s key (debits and credits).';
COMMENT ON COLUMN analytics.balance_ledger.reason IS 'The caller''s reason (debits and credits).';

CREATE VIEW analytics.daily_revenue AS
SELECT (t.purchase_date AT TIME ZONE 'UTC')::date AS day, t.currency, count(*) AS transactions,
    sum(t.price_milli) AS gross_milli,
    coalesce(sum(t.price_milli) FILTER (WHERE t.revocation_date IS NOT NULL), 0) AS refunded_milli,
    sum(t.price_milli) - coalesce(sum(t.price_milli) FILTER (WHERE t.revocation_date IS NOT NULL), 0) AS net_milli
FROM analytics.transactions t
WHERE t.price_milli IS NOT NULL AND t.currency IS NOT NULL
GROUP BY 1, 2;
COMMENT ON VIEW analytics.daily_revenue IS 'Revenue per UTC day (of purchase) and currency, in milliunits.';
COMMENT ON COLUMN analytics.daily_revenue.day IS 'UTC day of purchase.';
COMMENT ON COLUMN analytics.daily_revenue.currency IS 'ISO 4217 currency.';
COMMENT ON COLUMN analytics.daily_revenue.transactions IS 'Priced transactions that day.';
COMMENT ON COLUMN analytics.daily_revenue.gross_milli IS 'Sum of prices.';
COMMENT ON COLUMN analytics.daily_revenue.refunded_milli IS 'Of which refunded/revoked since.';
COMMENT ON COLUMN analytics.daily_revenue.net_milli IS 'gross_milli − refunded_milli.';

CREATE VIEW analytics.daily_metrics AS
WITH subs AS (
    SELECT * FROM analytics.transactions WHERE type = 'Auto-Renewable Subscription'
), bounds AS (
    SELECT min((purchase_date AT TIME ZONE 'UTC')::date) AS first_day FROM analytics.transactions
), days AS (
    SELECT generate_series(b.first_day, greatest(b.first_day, (now() AT TIME ZONE 'UTC')::date), interval '1 day')::date AS day
    FROM bounds b WHERE b.first_day IS NOT NULL
), new_subs AS (
    SELECT (purchase_date AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM subs
    WHERE transaction_id = original_transaction_id GROUP BY 1
), renewals AS (
    SELECT (purchase_date AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM subs
    WHERE transaction_id <> original_transaction_id GROUP BY 1
), expirations AS (
    SELECT (expires_date AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM analytics.subscriptions
    WHERE status = 'expired' GROUP BY 1
), refunds AS (
    SELECT (revocation_date AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM analytics.transactions
    WHERE revocation_date IS NOT NULL GROUP BY 1
), active AS (
    SELECT d.day, count(DISTINCT s.original_transaction_id) AS n
    FROM days d JOIN subs s
      ON s.purchase_date < ((d.day + 1)::timestamp AT TIME ZONE 'UTC')
     AND s.expires_date >= ((d.day + 1)::timestamp AT TIME ZONE 'UTC')
     AND NOT s.is_upgraded
     AND (s.revocation_date IS NULL OR s.revocation_date >= ((d.day + 1)::timestamp AT TIME ZONE 'UTC'))
    GROUP BY d.day
), revenue AS (
    SELECT r.day, jsonb_object_agg(r.currency, r.gross_milli) AS by_currency FROM analytics.daily_revenue r GROUP BY r.day
)
SELECT d.day, coalesce(n.n, 0) AS new_subscriptions, coalesce(rn.n, 0) AS renewals,
    coalesce(x.n, 0) AS expirations, coalesce(rf.n, 0) AS refunds, coalesce(a.n, 0) AS active_subscriptions,
    coalesce(rv.by_currency, '{}'::jsonb) AS revenue_milli_by_currency
FROM days d
LEFT JOIN new_subs n USING (day) LEFT JOIN renewals rn USING (day) LEFT JOIN expirations x USING (day)
LEFT JOIN refunds rf USING (day) LEFT JOIN active a USING (day) LEFT JOIN revenue rv USING (day);
COMMENT ON VIEW analytics.daily_metrics IS 'Per UTC day since the first transaction: subscription movements and gross revenue.';
COMMENT ON COLUMN analytics.daily_metrics.day IS 'UTC day.';
COMMENT ON COLUMN analytics.daily_metrics.new_subscriptions IS 'First purchases of auto-renewable subscriptions (transaction_id = original_transaction_id).';
COMMENT ON COLUMN analytics.daily_metrics.renewals IS 'Later periods (renewals, upgrades, re-subscriptions) purchased that day.';
COMMENT ON COLUMN analytics.daily_metrics.expirations IS 'Chains now expired whose last period ended that day.';
COMMENT ON COLUMN analytics.daily_metrics.refunds IS 'Transactions refunded or revoked that day (any type).';
COMMENT ON COLUMN analytics.daily_metrics.active_subscriptions IS 'Auto-renewable chains with a paid, unrevoked period covering the end of the day.';
COMMENT ON COLUMN analytics.daily_metrics.revenue_milli_by_currency IS 'Gross revenue of purchases that day per currency, milliunits, e.g. {"USD": 19980}.';

-- The service role runs the projector and publishes the catalog; it reads nothing else here.
GRANT USAGE ON SCHEMA analytics TO iap_ledger_service;
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON analytics.transactions, analytics.renewal_infos,
    analytics.chain_owners, analytics.notifications, analytics.balance_movements, analytics.products
    TO iap_ledger_service;
GRANT EXECUTE ON FUNCTION analytics.catch_up(integer) TO iap_ledger_service;
