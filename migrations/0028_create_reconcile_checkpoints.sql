-- How far the background reconciler (api.md §5, missed notifications) has asked Apple's
-- notification history, per app and store environment. The next run asks again from a little
-- before it (an overlap: a notification Apple signed late still falls inside), so a restart or
-- another instance taking over misses nothing; what it finds twice is a duplicate.
CREATE SCHEMA reconcile;
GRANT USAGE ON SCHEMA reconcile TO iap_ledger_service;

CREATE TABLE reconcile.checkpoints (
    bundle_id        TEXT NOT NULL,
    environment      TEXT NOT NULL,
    reconciled_until BIGINT NOT NULL,     -- ms since the epoch: the last run's `until`
    last_success_at  BIGINT NOT NULL,     -- ms since the epoch
    recorded_total   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (bundle_id, environment)
);
REVOKE ALL ON reconcile.checkpoints FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON reconcile.checkpoints TO iap_ledger_service;

COMMENT ON TABLE reconcile.checkpoints IS 'Per app and store environment: how far the reconciler has read Apple''s notification history.';
