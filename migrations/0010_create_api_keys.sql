-- API keys: only a SHA-256 of each secret is stored; the secret is shown once at creation.
CREATE SCHEMA IF NOT EXISTS auth;
GRANT USAGE ON SCHEMA auth TO iap_ledger_service;

CREATE TABLE auth.api_keys (
    name        TEXT PRIMARY KEY,
    secret_hash BYTEA NOT NULL,
    scopes      TEXT[] NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at  TIMESTAMPTZ,
    CONSTRAINT api_keys_scopes_known CHECK (scopes <@ ARRAY['read', 'write', 'admin']::TEXT[]),
    CONSTRAINT api_keys_name_not_empty CHECK (name <> '')
);
CREATE UNIQUE INDEX api_keys_secret_hash_idx ON auth.api_keys (secret_hash);

GRANT SELECT, INSERT, UPDATE ON auth.api_keys TO iap_ledger_service;
