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

-- Refilled from the log: every user who claimed a chain carrying an appTransactionId (when
-- each was first seen: the later of the two events). Live, a chain transferred before the Apple
-- Account appeared on it counts only its owner then; the rebuild counts both: the table only
-- decides future hints, the hints given are events. A replay runs it in its swap transaction,
-- and it runs once here, so an Apple Account bought with before this migration is known to the
-- hints and to RESCIND_CONSENT.
CREATE FUNCTION proj.rebuild_apple_accounts() RETURNS void LANGUAGE sql AS $$
    DELETE FROM proj.apple_accounts;
    INSERT INTO proj.apple_accounts (app_transaction_id, user_id, first_seen_at)
    SELECT t.data->>'appTransactionId', c.data->>'userId', min(greatest(t.recorded_at, c.recorded_at))
    FROM es.events t
    JOIN es.events c ON c.type = 'ChainClaimed' AND c.data->>'originalTransactionId' = t.data->>'originalTransactionId'
    WHERE t.type = 'TransactionRecorded' AND t.data ? 'appTransactionId'
    GROUP BY 1, 2;
$$;
SELECT proj.rebuild_apple_accounts();

COMMENT ON TABLE proj.apple_accounts IS 'appTransactionId (one per Apple Account and app) and the users whose chains carried it.';

RESET ROLE;
