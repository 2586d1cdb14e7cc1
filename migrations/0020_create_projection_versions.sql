-- Which version of each projection the database holds and how far it has read the log.
-- The service compares `version` with the constant its code declares (ProjectionVersions.swift)
-- at start and rebuilds what is behind before serving reads from it.
SET ROLE iap_ledger_service;

CREATE TABLE proj.projection_versions (
    name        TEXT PRIMARY KEY,
    version     INTEGER NOT NULL,
    position_tx XID8 NOT NULL DEFAULT '0',   -- (position_tx, position): the last event folded
    position    BIGINT NOT NULL DEFAULT 0,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

RESET ROLE;
