-- Which users bought with which Apple Account (api.md §7): Apple's appTransactionId (one per
-- Apple Account and app) and each user whose chain carried it. Ingest reads it to notice a
-- second user buying with an Apple Account seen before, and records that as an
-- AppleAccountShared event on the later user's stream (the Customer's `sameAppleAccountAs`);
-- the events are the truth, this table only their index. Written in the same transaction as
-- the facts; owned by the service role: a replay rebuilds it from the log.
SET ROLE iap_ledger_service;

CREATE TABLE proj.apple_accounts (
    app_transaction_id TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    first_seen_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (app_transaction_id, user_id)
);
CREATE INDEX apple_accounts_user_id_idx ON proj.apple_accounts (user_id);

-- Filled from the log at once (the same statement as a replay's rebuild), so an Apple Account
-- bought with before this migration is known to the hints and to RESCIND_CONSENT.
INSERT INTO proj.apple_accounts (app_transaction_id, user_id, first_seen_at)
SELECT t.data->>'appTransactionId', c.data->>'userId', min(greatest(t.recorded_at, c.recorded_at))
FROM es.events t
JOIN es.events c ON c.type = 'ChainClaimed' AND c.data->>'originalTransactionId' = t.data->>'originalTransactionId'
WHERE t.type = 'TransactionRecorded' AND t.data ? 'appTransactionId'
GROUP BY 1, 2;

COMMENT ON TABLE proj.apple_accounts IS 'appTransactionId (one per Apple Account and app) and the users whose chains carried it.';

RESET ROLE;
