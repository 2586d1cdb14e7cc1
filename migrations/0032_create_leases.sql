-- Leases of the background jobs (the change clock, the analytics projector, each webhook
-- endpoint's deliverer, the reconciler, the consumption responder, a replay): of several service
-- instances on one database, the one holding a job's lease runs it. A row in a table rather than
-- a session advisory lock, because through PgBouncer in transaction pooling a session lock stays
-- with a pooled server connection: never freed when its instance dies, or taken by an unrelated
-- client. A lease works the same direct and through any pooler.
--
-- Times are the database's (`now()`), so instances whose clocks disagree still agree on who
-- holds what. A holder renews well within `expires_at`; a dead one's lease runs out and the next
-- instance that asks takes it (LeaseTable.acquire: one statement). A graceful stop deletes the
-- row, so the next instance takes it at once.
CREATE SCHEMA ops;
GRANT USAGE ON SCHEMA ops TO iap_ledger_service;

-- The fencing token: a fresh value each time a lease changes hands (never reused, even after a
-- release deleted the row), so a write guarded by it can tell a new holder from an old one.
CREATE SEQUENCE ops.lease_tokens;
REVOKE ALL ON SEQUENCE ops.lease_tokens FROM PUBLIC;
GRANT USAGE ON SEQUENCE ops.lease_tokens TO iap_ledger_service;

CREATE TABLE ops.leases (
    name        TEXT PRIMARY KEY,        -- the job: change-clock, analytics-projector, webhooks:<endpoint>, …
    holder      TEXT NOT NULL,           -- the holding instance's name (IAP_LEDGER_INSTANCE), for people
    claim       TEXT NOT NULL,           -- a random id of the holding process: two processes given the
                                         -- same instance name never both hold a lease
    token       BIGINT NOT NULL,         -- the fencing token (ops.lease_tokens)
    acquired_at TIMESTAMPTZ NOT NULL,    -- when this holder took it
    renewed_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
REVOKE ALL ON ops.leases FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON ops.leases TO iap_ledger_service;

COMMENT ON TABLE ops.leases IS 'Who runs each background job: the holder renews before expires_at; an expired lease is free.';

-- The fencing check of a job's write transaction: fails (LE001) unless `p_claim` still holds
-- lease `p_name` with token `p_token`, and keeps the row share-locked until the transaction
-- ends, so no other instance can take the lease between the check and the commit (its acquire
-- waits). A holder that stalled past its lease therefore cannot commit work its successor
-- already does.
CREATE FUNCTION ops.require_lease(p_name text, p_claim text, p_token bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM ops.leases l
    WHERE l.name = p_name AND l.claim = p_claim AND l.token = p_token AND l.expires_at > now()
    FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'lease % is no longer held with token %', p_name, p_token USING ERRCODE = 'LE001';
    END IF;
END
$$;
REVOKE ALL ON FUNCTION ops.require_lease(text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ops.require_lease(text, text, bigint) TO iap_ledger_service;
