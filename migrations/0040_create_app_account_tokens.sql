-- Which user each registered App Store appAccountToken belongs to (api.md §7). The log's
-- AppAccountTokenRegistered events are the truth; this table is their index, written in the
-- same transaction as the event, so ingest can find a token's user in one indexed read and a
-- token can never belong to two users: the primary key refuses the loser of a race. Tokens
-- are stored lowercased (they compare case-insensitively). Owned by the service role: a
-- replay rebuilds it from the log.
SET ROLE iap_ledger_service;

CREATE TABLE proj.app_account_tokens (
    app_account_token TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL,
    minted            BOOLEAN NOT NULL,
    registered_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX app_account_tokens_user_id_idx ON proj.app_account_tokens (user_id);

COMMENT ON TABLE proj.app_account_tokens IS 'Registered appAccountTokens (lowercased) and their user, from AppAccountTokenRegistered events.';

RESET ROLE;
