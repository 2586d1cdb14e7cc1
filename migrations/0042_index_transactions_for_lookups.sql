-- Support lookups (api.md §7, GET /v1/lookup) read the log itself, not a projection: what a
-- purchase, a sync or an order lookup recorded is found in the same instant (the analytics
-- projection follows the log later), and the read works on a read replica as well (an index
-- is replicated with its table). Two partial expression indexes over TransactionRecorded
-- events only (every recorded version of a transaction is one such event):
-- - by Apple's transactionId: which chain (originalTransactionId) a transaction belongs to;
-- - by appAccountToken, lowercased (tokens compare case-insensitively): the chains whose
--   transactions carry a token, registered with a user or not.
-- A lookup by originalTransactionId needs neither: the chain's stream row in es.streams is
-- its primary key.
-- Built in the migration's transaction (a migration cannot CREATE INDEX CONCURRENTLY): the
-- build holds writes to es.events back for as long as it reads the log once (both indexes:
-- 0.5 s for 400,000 events, 80 MB, on a 2-core test machine; expect seconds per few million).
-- When erasure (api.md §7) keeps tokens in the log only in an unreadable form, the token
-- index must follow that form: it indexes the plain value stored today.
CREATE INDEX events_transaction_id_idx ON es.events ((data->>'transactionId'))
    WHERE type = 'TransactionRecorded';
CREATE INDEX events_app_account_token_idx ON es.events ((lower(data->>'appAccountToken')))
    WHERE type = 'TransactionRecorded' AND data ? 'appAccountToken';
