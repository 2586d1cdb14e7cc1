-- Erasure (api.md §7, docs/architecture.md "Erasure on an append-only log", step 4): a person's
-- rows are deleted, and a deleted proj.users row is nothing the user document caches' check
-- (changed_tx) can see. Each erasure moves this one-row counter in its transaction; the check
-- reads it with the table's oid and drops every cached document when either moved. Erasures
-- are rare: dropping everything then is cheaper than a list of erased ids, which would be the
-- ids themselves.
SET ROLE iap_ledger_service;

CREATE TABLE identity.erasure_epoch (
    epoch BIGINT NOT NULL,
    one   BOOLEAN PRIMARY KEY DEFAULT true CHECK (one)
);
INSERT INTO identity.erasure_epoch (epoch) VALUES (0);
COMMENT ON TABLE identity.erasure_epoch IS 'Moved by each erasure, in its transaction: the user document caches drop everything when it moves.';

RESET ROLE;

-- An erasure puts the person's subject and token subjects where their ids and tokens were in
-- the analytics tables (their money stays, under the opaque ids).
GRANT UPDATE ON analytics.renewal_info_versions TO iap_ledger_service;
-- … and deletes the deliveries of their changes (the feed rows stay, sealed with their key).
GRANT DELETE ON webhooks.deliveries TO iap_ledger_service;
