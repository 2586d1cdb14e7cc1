-- The log migration (docs/architecture.md, "Erasure on an append-only log", "Events already
-- written"): `iap-ledger migrate` stores the events, changes and deliveries written before
-- subjects (0047) and token subjects (0049) again as new writes are, once, and records it
-- here. Erasure needs it for anyone recorded before: until then they are refused (409
-- erasure_needs_log_migration). A database with no event yet has nothing to migrate: it is
-- born sealed.
SET ROLE iap_ledger_service;

CREATE TABLE identity.log_sealing (
    sealed_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    events_rewritten  BIGINT NOT NULL,
    changes_rewritten BIGINT NOT NULL,
    users             BIGINT NOT NULL,   -- legacy users given a subject
    tokens            BIGINT NOT NULL,   -- tokens in clear given a token subject
    one               BOOLEAN PRIMARY KEY DEFAULT true CHECK (one)
);
INSERT INTO identity.log_sealing (events_rewritten, changes_rewritten, users, tokens)
SELECT 0, 0, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM es.events);
COMMENT ON TABLE identity.log_sealing IS 'One row once the log migration of iap-ledger migrate ran (or the database was born with nothing to migrate).';

RESET ROLE;
