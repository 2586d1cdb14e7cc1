-- Money you can quote (api.md §3.1), third step: free trials and what became of them, per chain —
-- the base of cohort, retention and LTV queries, and of the overview's trialsStarted and
-- trialsConverted.

-- A free-trial period: Apple's introductory offer (offer_type 1) of type FREE_TRIAL, or a period
-- priced 0. The one rule: the overview's MRR leaves these out and the lifecycles count them.
CREATE FUNCTION analytics.is_free_trial(p_price_milli bigint, p_offer_type bigint, p_offer_discount_type text)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    SELECT coalesce(p_price_milli = 0 OR (p_offer_type = 1 AND p_offer_discount_type = 'FREE_TRIAL'), false)
$$;
COMMENT ON FUNCTION analytics.is_free_trial(bigint, bigint, text) IS 'Whether a period is a free trial: price 0, or an introductory offer (offer_type 1) of type FREE_TRIAL.';

-- One row per auto-renewable chain: its free trial, its first paid period and its paid periods
-- so far, with the money it brought (revenue_movements, in the currency of its first paid period).
CREATE VIEW analytics.subscription_lifecycles AS
WITH periods AS (
    SELECT t.*, analytics.is_free_trial(t.price_milli, t.offer_type, t.offer_discount_type) AS free
    FROM analytics.transactions t
    WHERE t.type = 'Auto-Renewable Subscription'
), chains AS (
    SELECT p.original_transaction_id,
        (array_agg(p.environment ORDER BY p.purchase_date, p.transaction_id))[1] AS environment,
        (array_agg(p.product_id ORDER BY p.purchase_date, p.transaction_id))[1] AS product_id,
        min(p.purchase_date) AS started_at,
        min(p.purchase_date) FILTER (WHERE p.free) AS trial_started_at,
        (array_agg(p.expires_date ORDER BY p.purchase_date, p.transaction_id) FILTER (WHERE p.free))[1] AS trial_expires_at,
        min(p.purchase_date) FILTER (WHERE NOT p.free AND p.price_milli > 0) AS first_paid_at,
        (array_agg(p.transaction_id ORDER BY p.purchase_date, p.transaction_id) FILTER (WHERE NOT p.free AND p.price_milli > 0))[1]
            AS first_paid_transaction_id,
        (array_agg(p.currency ORDER BY p.purchase_date, p.transaction_id) FILTER (WHERE NOT p.free AND p.price_milli > 0))[1]
            AS currency,
        count(*) FILTER (WHERE NOT p.free AND p.price_milli > 0) AS paid_periods,
        max(p.expires_date) FILTER (WHERE NOT p.free AND p.price_milli > 0) AS paid_through
    FROM periods p
    GROUP BY p.original_transaction_id
), money AS (
    SELECT m.original_transaction_id, m.currency,
        coalesce(sum(m.amount_milli) FILTER (WHERE m.kind = 'charge'), 0) AS gross_milli,
        sum(m.amount_milli) AS net_milli, sum(m.proceeds_milli) AS proceeds_milli
    FROM analytics.revenue_movements m
    GROUP BY m.original_transaction_id, m.currency
)
SELECT c.original_transaction_id, c.environment, o.user_id, c.product_id, c.started_at, c.trial_started_at,
    c.trial_expires_at, c.first_paid_at, c.first_paid_transaction_id,
    coalesce(c.trial_started_at IS NOT NULL AND c.first_paid_at > c.trial_started_at, false) AS converted,
    c.paid_periods, c.paid_through, c.currency,
    coalesce(m.gross_milli, 0) AS gross_milli, coalesce(m.net_milli, 0) AS net_milli,
    coalesce(m.proceeds_milli, 0) AS proceeds_milli
FROM chains c
LEFT JOIN analytics.chain_owners o USING (original_transaction_id)
LEFT JOIN money m ON m.original_transaction_id = c.original_transaction_id AND m.currency = c.currency;
COMMENT ON VIEW analytics.subscription_lifecycles IS 'One row per auto-renewable chain: its free trial, first paid period, paid periods so far and the money it brought (the base of cohort, retention and LTV queries).';
COMMENT ON COLUMN analytics.subscription_lifecycles.original_transaction_id IS 'The chain.';
COMMENT ON COLUMN analytics.subscription_lifecycles.environment IS 'Production, Sandbox, Xcode or LocalTesting (of its first period).';
COMMENT ON COLUMN analytics.subscription_lifecycles.user_id IS 'The chain''s owner now (NULL while unclaimed).';
COMMENT ON COLUMN analytics.subscription_lifecycles.product_id IS 'The product of its first period.';
COMMENT ON COLUMN analytics.subscription_lifecycles.started_at IS 'When its first period (trial or paid) began.';
COMMENT ON COLUMN analytics.subscription_lifecycles.trial_started_at IS 'When its free trial began (analytics.is_free_trial); NULL: none.';
COMMENT ON COLUMN analytics.subscription_lifecycles.trial_expires_at IS 'When that free trial ended or ends.';
COMMENT ON COLUMN analytics.subscription_lifecycles.first_paid_at IS 'When its first paid period began; NULL: none yet.';
COMMENT ON COLUMN analytics.subscription_lifecycles.first_paid_transaction_id IS 'The transaction of that first paid period.';
COMMENT ON COLUMN analytics.subscription_lifecycles.converted IS 'A free trial was followed by a paid period.';
COMMENT ON COLUMN analytics.subscription_lifecycles.paid_periods IS 'Paid periods so far (renewals, and re-subscriptions in the same chain).';
COMMENT ON COLUMN analytics.subscription_lifecycles.paid_through IS 'End of its latest paid period.';
COMMENT ON COLUMN analytics.subscription_lifecycles.currency IS 'Currency of its first paid period, which the money columns are in.';
COMMENT ON COLUMN analytics.subscription_lifecycles.gross_milli IS 'Sum of its charges (revenue_movements) in that currency.';
COMMENT ON COLUMN analytics.subscription_lifecycles.net_milli IS 'Charges less refunds in that currency (its lifetime value so far).';
COMMENT ON COLUMN analytics.subscription_lifecycles.proceeds_milli IS 'Estimated proceeds of its charges and refunds in that currency.';

GRANT SELECT ON analytics.subscription_lifecycles TO iap_analyst, iap_ledger_service;
GRANT EXECUTE ON FUNCTION analytics.is_free_trial(bigint, bigint, text) TO iap_analyst, iap_ledger_service;
