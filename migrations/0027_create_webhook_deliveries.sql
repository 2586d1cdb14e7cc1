-- Webhook delivery of the change feed (api.md §4). Owner of every statement: WebhookDeliveriesTable.
--
-- webhooks.cursors: per endpoint, how far the feed has been turned into deliveries. A cursor
-- moves in the same transaction as the deliveries it creates, so a crash never skips or doubles
-- one. A new endpoint's row is created at the feed's head (it gets the changes from then on).
-- webhooks.deliveries: one row per (endpoint, change): pending (never tried, or queued again),
-- failed (tried, waiting for its next attempt), delivered, dead (the retry schedule ran out).
-- webhooks.attempts: every attempt, append-only (the service may read and insert only).
-- Times are ms since the epoch, like the feed's.
CREATE SCHEMA webhooks;
GRANT USAGE ON SCHEMA webhooks TO iap_ledger_service;

CREATE TABLE webhooks.cursors (
    endpoint   TEXT PRIMARY KEY,
    tx         XID8 NOT NULL,
    seq        BIGINT NOT NULL,
    started_at BIGINT NOT NULL
);

CREATE TABLE webhooks.deliveries (
    endpoint        TEXT NOT NULL,
    seq             BIGINT NOT NULL,       -- changes.feed.seq (the change id is chg_ + seq)
    tx              XID8 NOT NULL,         -- with seq: the change's cursor, the per-user order
    user_id         TEXT,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,   -- every attempt ever made
    failures        INTEGER NOT NULL DEFAULT 0,   -- failed attempts since last queued: the retry step
    next_attempt_at BIGINT NOT NULL,
    queued_at       BIGINT NOT NULL,       -- created, or queued again by a redeliver
    updated_at      BIGINT NOT NULL,
    delivered_at    BIGINT,
    last_status     INTEGER,               -- the last attempt's HTTP status, if it got one
    last_error      TEXT,                  -- or why it got none (never a response body)
    PRIMARY KEY (endpoint, seq)
);
-- What the dispatcher reads: the open deliveries of one endpoint in cursor order.
CREATE INDEX deliveries_open_idx ON webhooks.deliveries (endpoint, tx, seq) WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_status_idx ON webhooks.deliveries (endpoint, status, seq);

CREATE TABLE webhooks.attempts (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint     TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    attempted_at BIGINT NOT NULL,
    http_status  INTEGER,
    error        TEXT,
    duration_ms  INTEGER NOT NULL
);
CREATE INDEX attempts_delivery_idx ON webhooks.attempts (endpoint, seq, id);

REVOKE ALL ON webhooks.cursors, webhooks.deliveries, webhooks.attempts FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON webhooks.cursors, webhooks.deliveries TO iap_ledger_service;
GRANT SELECT, INSERT ON webhooks.attempts TO iap_ledger_service;

COMMENT ON TABLE webhooks.deliveries IS 'One row per webhook endpoint and change (api.md §4): pending, failed (awaiting retry), delivered or dead.';
COMMENT ON TABLE webhooks.attempts IS 'Append-only log of every webhook attempt: time, HTTP status or error, duration.';
