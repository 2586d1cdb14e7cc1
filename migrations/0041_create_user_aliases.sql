-- Which user each alias id names (api.md §7). The log's AliasMerged events are the truth; this
-- table is their index, written in the same transaction as the events, so every call that
-- names a user resolves it in one indexed read. merged_seq is the AliasMerged event's sequence
-- number and merged_at its recorded time: an `asOf` read resolves an alias only from then on.
-- Owned by the service role: a replay rebuilds it from the log.
SET ROLE iap_ledger_service;

CREATE TABLE proj.user_aliases (
    alias      TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    merged_seq BIGINT NOT NULL,
    merged_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX user_aliases_user_id_idx ON proj.user_aliases (user_id);

COMMENT ON TABLE proj.user_aliases IS 'Alias ids and the user they were merged into, from AliasMerged events.';

RESET ROLE;
