-- The event log (eventstore.md §6). Catch-up readers order by (tx, seq) below the xid horizon,
-- never by seq alone: seq is assigned at INSERT but becomes visible at COMMIT.
CREATE SCHEMA es;

-- Head of each stream; its row is what the expected-version check reads.
CREATE TABLE es.streams (
    stream_id text NOT NULL,
    version bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT streams_pkey PRIMARY KEY (stream_id),
    CONSTRAINT streams_version_positive CHECK (version > 0)
);

CREATE TABLE es.events (
    seq bigint GENERATED ALWAYS AS IDENTITY,               -- stable id; may have gaps
    tx xid8 NOT NULL DEFAULT pg_current_xact_id(),         -- commit-safe order key
    stream_id text NOT NULL,
    version bigint NOT NULL,                               -- dense per stream, from 1
    type text NOT NULL,
    schema_version smallint NOT NULL DEFAULT 1,
    data jsonb NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',                  -- source, request id, key name, …
    payload text,                                          -- the verified source (JWS or verifyReceipt JSON)
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT events_pkey PRIMARY KEY (seq),
    CONSTRAINT events_stream_version_key UNIQUE (stream_id, version),
    CONSTRAINT events_version_positive CHECK (version > 0)
);

CREATE INDEX events_tx_seq_idx ON es.events (tx, seq);

-- Idempotency: one row per (source, external id) ever appended, e.g. ('apple', notificationUUID).
CREATE TABLE es.inbox (
    source text NOT NULL,
    external_id text NOT NULL,
    stream_id text NOT NULL,
    version bigint NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT inbox_pkey PRIMARY KEY (source, external_id)
);

-- Catch-up positions, saved in the same transaction as the projection writes they cover.
CREATE TABLE es.checkpoints (
    name text NOT NULL,
    tx xid8 NOT NULL DEFAULT '0',
    seq bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT checkpoints_pkey PRIMARY KEY (name)
);
