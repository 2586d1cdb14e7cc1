-- Which app and store environment each test notification token (api.md §5, "is my notification
-- URL right?") was asked of. Apple's Get Test Notification Status must be asked in the
-- environment that handed the token out, and Apple's token does not say which one; the contract's
-- `GET /v1/admin/apple/test-notification/{token}` names none, so the service remembers it here
-- when `POST /v1/admin/apple/test-notification` gets the token. A table, not memory: the lookup
-- may reach another instance, or this one after a restart.
CREATE TABLE apple.test_notification_tokens (
    token        TEXT PRIMARY KEY,
    bundle_id    TEXT NOT NULL,
    environment  TEXT NOT NULL,
    requested_at BIGINT NOT NULL      -- ms since the epoch
);
REVOKE ALL ON apple.test_notification_tokens FROM PUBLIC;
GRANT SELECT, INSERT ON apple.test_notification_tokens TO iap_ledger_service;

COMMENT ON TABLE apple.test_notification_tokens IS 'Test notification tokens Apple handed out, with the app and environment that asked (Get Test Notification Status is asked there).';
