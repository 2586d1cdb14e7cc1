-- Apple's CONSUMPTION_REQUESTs waiting for an answer (api.md §5). A row is written in the same
-- transaction that records the notification, so a request acknowledged to Apple is never
-- forgotten; the responder (one instance) sends the answer, retries within Apple's 12 h window,
-- and moves the row to a final state. The attempts themselves, with Apple's answers, are events
-- (ConsumptionAnswered) in the log: this table only says what is still to do.
CREATE SCHEMA apple;
GRANT USAGE ON SCHEMA apple TO iap_ledger_service;

CREATE TABLE apple.consumption_requests (
    notification_uuid       TEXT PRIMARY KEY,
    original_transaction_id TEXT NOT NULL,
    transaction_id          TEXT NOT NULL,
    environment             TEXT,
    requested_at            BIGINT NOT NULL,   -- the notification's signedDate, ms since the epoch
    deadline                BIGINT NOT NULL,   -- requested_at + 12 h: Apple ignores answers after it
    state                   TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'answered', 'rejected', 'expired', 'skipped')),
    attempts                INTEGER NOT NULL DEFAULT 0,
    next_attempt_at         BIGINT NOT NULL,
    last_error              TEXT,
    updated_at              BIGINT NOT NULL
);
CREATE INDEX consumption_requests_due_idx ON apple.consumption_requests (next_attempt_at) WHERE state = 'pending';
REVOKE ALL ON apple.consumption_requests FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON apple.consumption_requests TO iap_ledger_service;

COMMENT ON TABLE apple.consumption_requests IS 'Apple''s CONSUMPTION_REQUESTs and whether they were answered; each attempt is a ConsumptionAnswered event.';

-- Requests recorded before this table existed and still inside Apple's window.
INSERT INTO apple.consumption_requests
    (notification_uuid, original_transaction_id, transaction_id, environment, requested_at, deadline,
     next_attempt_at, updated_at)
SELECT e.data->>'notificationUUID', e.data->>'originalTransactionId', e.data->>'transactionId',
       e.data->>'environment', (e.data->>'signedDate')::bigint, (e.data->>'signedDate')::bigint + 43200000,
       (extract(epoch FROM now()) * 1000)::bigint, (extract(epoch FROM now()) * 1000)::bigint
FROM es.events e
WHERE e.type = 'NotificationReceived' AND e.data->>'notificationType' = 'CONSUMPTION_REQUEST'
  AND e.data ? 'transactionId' AND e.data ? 'originalTransactionId'
  AND (e.data->>'signedDate')::bigint + 43200000 > (extract(epoch FROM now()) * 1000)::bigint
ON CONFLICT (notification_uuid) DO NOTHING;
