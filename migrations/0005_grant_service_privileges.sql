-- What the runtime role may do. Events and the inbox: read and append, never change or delete
-- (the trigger of 0003 refuses that even to the owner). Stream heads and checkpoints are
-- mutable bookkeeping.
GRANT USAGE ON SCHEMA es TO iap_ledger_service;
REVOKE ALL ON es.events, es.inbox, es.streams, es.checkpoints FROM PUBLIC;
REVOKE UPDATE, DELETE, TRUNCATE ON es.events, es.inbox FROM iap_ledger_service;
GRANT SELECT, INSERT ON es.events, es.inbox TO iap_ledger_service;
GRANT SELECT, INSERT, UPDATE ON es.streams TO iap_ledger_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON es.checkpoints TO iap_ledger_service;

REVOKE ALL ON FUNCTION es.append(text[], bigint[], text, text, text[], text[], smallint[], jsonb[], jsonb[], text[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION es.append(text[], bigint[], text, text, text[], text[], smallint[], jsonb[], jsonb[], text[])
    TO iap_ledger_service;
