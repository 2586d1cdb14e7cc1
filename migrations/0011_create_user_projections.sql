-- Inline projections written in the same transaction as the events they derive from, so a
-- write's response and every later read agree (read-your-writes). Owned by the service role:
-- replay builds their successors and swaps them in.
SET ROLE iap_ledger_service;

-- Who owns each transaction chain now. A chain with no row is unclaimed: its facts wait.
CREATE TABLE proj.chain_owners (
    original_transaction_id TEXT PRIMARY KEY,
    user_id                 TEXT NOT NULL,
    claimed_at              TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX chain_owners_user_id_idx ON proj.chain_owners (user_id);

-- The rendered api.md Customer document of each user, judged at rendered_at and unchanged
-- until valid_until (the next expiry or grace end; NULL: until the next event). A read
-- inside that window returns the stored bytes as they are: one indexed row, no folding.
CREATE TABLE proj.users (
    user_id     TEXT PRIMARY KEY,
    version     BIGINT NOT NULL,
    document    TEXT NOT NULL,
    rendered_at BIGINT NOT NULL,
    valid_until BIGINT,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

RESET ROLE;
