-- Projections belong to the runtime role: it creates, fills and swaps its own tables
-- (inline projection, blue/green rebuilds) without admin rights.
CREATE SCHEMA proj AUTHORIZATION iap_ledger_service;
