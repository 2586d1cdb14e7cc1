-- Apple's Retention Messaging requests (api.md §8, POST /v1/apple/retention-message) and what
-- the service answered. Each one is first a RetentionRequestAnswered event on the chain's
-- stream (the log keeps it); this index is written in the same transaction, outside the
-- analytics schema so an analytics rebuild never empties it. analytics.retention_requests
-- is the analysts' view of it: the retention funnel by rule.
CREATE TABLE apple.retention_requests (
    request_identifier      TEXT PRIMARY KEY,           -- Apple's requestIdentifier (a UUID)
    original_transaction_id TEXT NOT NULL,
    product_id              TEXT NOT NULL,
    user_locale             TEXT NOT NULL,
    environment             TEXT NOT NULL,
    bundle_id               TEXT NOT NULL,              -- the configured app whose rules answered
    requested_at            BIGINT NOT NULL,            -- Apple's signedDate, ms since the epoch
    tenure_months           INTEGER NOT NULL,           -- as the rules saw it
    rule_index              INTEGER,                    -- 0-based index in the app's retention.rules; NULL: none matched
    answer_kind             TEXT NOT NULL
        CHECK (answer_kind IN ('message', 'alternateProduct', 'promotionalOffer', 'none')),
    message_identifier      TEXT,
    answer_product_id       TEXT,                       -- alternateProduct.productId
    offer_identifier        TEXT,                       -- promotionalOffer's offerId
    answered_at             BIGINT NOT NULL,
    seq                     BIGINT NOT NULL             -- the event's place in the log
);
CREATE INDEX retention_requests_chain_idx ON apple.retention_requests (original_transaction_id, requested_at);
REVOKE ALL ON apple.retention_requests FROM PUBLIC;
GRANT SELECT, INSERT ON apple.retention_requests TO iap_ledger_service;
COMMENT ON TABLE apple.retention_requests IS 'Apple''s Retention Messaging requests and the answers; each one is a RetentionRequestAnswered event.';

-- Renewed: a later transaction of the chain purchased after Apple asked (a renewal, or a
-- resubscription of the same chain). The view reads the analytics projection, which follows
-- the log asynchronously, so `renewed` can lag the ledger by the projector's delay.
CREATE VIEW analytics.retention_requests AS
SELECT r.request_identifier,
       r.original_transaction_id,
       r.product_id,
       r.user_locale,
       r.environment,
       r.bundle_id,
       analytics.ms(r.requested_at) AS requested_at,
       r.tenure_months,
       r.rule_index,
       r.answer_kind,
       r.message_identifier,
       r.answer_product_id,
       r.offer_identifier,
       analytics.ms(r.answered_at) AS answered_at,
       EXISTS (
           SELECT 1 FROM analytics.transactions t
           WHERE t.original_transaction_id = r.original_transaction_id
             AND t.purchase_date > analytics.ms(r.requested_at)
       ) AS renewed,
       (SELECT min(t.purchase_date) FROM analytics.transactions t
        WHERE t.original_transaction_id = r.original_transaction_id
          AND t.purchase_date > analytics.ms(r.requested_at)) AS renewed_at
FROM apple.retention_requests r;
COMMENT ON VIEW analytics.retention_requests IS 'One row per Retention Messaging request Apple sent: the rule that answered (rule_index, NULL when none matched and Apple showed its default), the answer kind, and whether the chain renewed afterwards.';
COMMENT ON COLUMN analytics.retention_requests.request_identifier IS 'Apple requestIdentifier (lower-case UUID): one per request.';
COMMENT ON COLUMN analytics.retention_requests.original_transaction_id IS 'The subscription chain Apple asked about.';
COMMENT ON COLUMN analytics.retention_requests.product_id IS 'The product Apple asked about.';
COMMENT ON COLUMN analytics.retention_requests.user_locale IS 'Apple userLocale, e.g. en-US.';
COMMENT ON COLUMN analytics.retention_requests.environment IS 'Production or Sandbox (as Apple sent it).';
COMMENT ON COLUMN analytics.retention_requests.bundle_id IS 'The configured app whose retention rules answered.';
COMMENT ON COLUMN analytics.retention_requests.requested_at IS 'Apple signedDate: when Apple asked.';
COMMENT ON COLUMN analytics.retention_requests.message_identifier IS 'The messageIdentifier answered (lower-case UUID); NULL: none.';
COMMENT ON COLUMN analytics.retention_requests.answer_product_id IS 'alternateProduct.productId answered; NULL for other kinds.';
COMMENT ON COLUMN analytics.retention_requests.offer_identifier IS 'The promotional offer id answered; NULL for other kinds.';
COMMENT ON COLUMN analytics.retention_requests.answered_at IS 'When the service answered.';
COMMENT ON COLUMN analytics.retention_requests.rule_index IS '0-based index of the matching rule in the app''s retention.rules; NULL: no rule matched (empty answer).';
COMMENT ON COLUMN analytics.retention_requests.answer_kind IS 'message, alternateProduct, promotionalOffer, or none (empty answer).';
COMMENT ON COLUMN analytics.retention_requests.tenure_months IS 'Whole months from the chain''s originalPurchaseDate to the request, as the rules saw it (0 for a chain the ledger does not know).';
COMMENT ON COLUMN analytics.retention_requests.renewed IS 'True when a transaction of the chain was purchased after the request (from analytics.transactions).';
COMMENT ON COLUMN analytics.retention_requests.renewed_at IS 'The first such purchase date; NULL when not renewed.';
GRANT SELECT ON analytics.retention_requests TO iap_analyst, iap_ledger_service;
