-- Promotional grants (api.md §6): the Customer document's entitlement says source 'promotional'
-- and which grant decides it (grantId); analysts see both. The view is the one of 0021 with one
-- column added at the end (CREATE OR REPLACE VIEW keeps its privileges and dependants).
CREATE OR REPLACE VIEW analytics.entitlements AS
SELECT d.user_id, e.key AS entitlement,
    CASE
        WHEN d.valid_until IS NULL OR d.valid_until > now() THEN (e.value->>'active')::boolean
        ELSE (e.value->>'active')::boolean
             AND (e.value->>'expiresAt' IS NULL OR (e.value->>'expiresAt')::timestamptz > now())
    END AS active,
    (e.value->>'expiresAt')::timestamptz AS expires_at, e.value->>'productId' AS product_id,
    e.value->>'source' AS source, e.value->>'originalTransactionId' AS original_transaction_id,
    (e.value->>'willRenew')::boolean AS will_renew, (e.value->>'inGracePeriod')::boolean AS in_grace_period,
    d.rendered_at AS judged_at, e.value->>'grantId' AS grant_id
FROM analytics.user_documents() d, jsonb_each(d.document->'entitlements') e;
COMMENT ON COLUMN analytics.entitlements.source IS 'subscription, non_consumable, non_renewing_subscription, promotional (a grant of POST /v1/users/{id}/grants) or admin (as the Customer document spells it).';
COMMENT ON COLUMN analytics.entitlements.grant_id IS 'The promotional grant (grt_…) that decides the entitlement when source is promotional; NULL otherwise.';
