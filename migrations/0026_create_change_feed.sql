-- The change feed (api.md §4): every transition of what a user has, written in the same
-- transaction as the events that cause it (or, for what time alone changes, by the clock that
-- re-renders due documents), so a write that rolls back emits nothing and an acknowledged
-- write's changes are never lost. Append-only like the event log.
--
-- Order: `seq` is assigned at INSERT and rows become visible at COMMIT, so `seq` alone is not
-- an order a reader can follow without skipping (eventstore.md §1). Readers use the same
-- transaction-id horizon as the log: rows with tx < pg_snapshot_xmin(pg_current_snapshot()),
-- ordered by (tx, seq). A change's cursor is that pair; its id is its seq.
-- Owned by the admin role, like es.events: the service may read and insert, and as a non-owner
-- it can neither alter rows nor disable the trigger that refuses it.
CREATE SCHEMA changes;
GRANT USAGE ON SCHEMA changes TO iap_ledger_service;

CREATE TABLE changes.feed (
    seq                     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx                      XID8 NOT NULL DEFAULT pg_current_xact_id(),
    type                    TEXT NOT NULL,
    user_id                 TEXT,              -- NULL only for a TEST change
    environment             TEXT,
    occurred_at             BIGINT NOT NULL,   -- ms since the epoch: the instant of the transition
    recorded_at             BIGINT NOT NULL,   -- ms since the epoch: when the ledger wrote it
    product_id              TEXT,
    original_transaction_id TEXT,
    transaction_id          TEXT,
    entitlement_ids         TEXT[] NOT NULL,
    details                 TEXT NOT NULL,     -- a JSON object
    customer                TEXT NOT NULL      -- the Customer document after the change (JSON)
);
CREATE INDEX feed_tx_seq_idx ON changes.feed (tx, seq);
CREATE INDEX feed_user_tx_seq_idx ON changes.feed (user_id, tx, seq);
REVOKE ALL ON changes.feed FROM PUBLIC;
GRANT SELECT, INSERT ON changes.feed TO iap_ledger_service;

-- Published changes are never altered: not by the service, not by its owner by accident.
CREATE FUNCTION changes.refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on %.% is refused: the change feed is append-only', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'ES002';
END
$$;
CREATE TRIGGER feed_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON changes.feed
    FOR EACH STATEMENT EXECUTE FUNCTION changes.refuse_change();

-- The time-driven clock finds documents due for re-rendering (an expiry, a grace end) here.
-- A replay's successor table gets the same index (UserDocumentsTable.indexNext).
SET ROLE iap_ledger_service;
CREATE INDEX users_valid_until_idx ON proj.users (valid_until) WHERE valid_until IS NOT NULL;
RESET ROLE;

COMMENT ON TABLE changes.feed IS 'Append-only feed of user changes (api.md §4): one row per transition, in (tx, seq) order below the xid horizon.';
