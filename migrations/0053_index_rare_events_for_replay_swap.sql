-- Partial indexes for the three passes a replay's swap makes over the log (issue 39). Each rebuilds
-- a table from the events of one rare type: the alias index (AliasMerged), the appAccountToken
-- index (AppAccountTokenRegistered) and the Apple accounts (TransactionRecorded with an
-- appTransactionId, joined to ChainClaimed). Without an index each was a seq scan of es.events:
-- ~430 ms of a 1M-event replay, ~300 ms of it under the swap's locks. With these the statements
-- read only their own events, and a log with few of them pays next to nothing.
-- What ingest pays: an event that matches no predicate costs an insert only the predicate checks
-- (a type comparison; for a TransactionRecorded also `data ? 'appTransactionId'`). One that
-- matches adds one index entry: every ChainClaimed (one per chain claimed, not per transaction),
-- and every TransactionRecorded that carries an appTransactionId. StoreKit puts one in every
-- transaction of recent OS versions, so on such a log that index grows with the transactions,
-- and the rebuild reads it with the ChainClaimed index (or, when most transactions carry one,
-- the planner goes back to scanning, as before).
-- Built in the migration's transaction (a migration cannot CREATE INDEX CONCURRENTLY): the build
-- holds writes to es.events back for as long as it reads the log four times and samples it once
-- (~2 s per million events on the 2-core test machine).

-- UserAliasesTable.rebuild: its INSERT reads these events, and its DELETE probes them by seq
-- (an index-only scan of this index).
CREATE INDEX events_alias_merged_idx ON es.events (seq) WHERE type = 'AliasMerged';

-- AppAccountTokensTable.rebuild reads these in its DISTINCT ON's own order (token, then seq),
-- which it sorts: few rows.
CREATE INDEX events_app_account_token_registered_idx ON es.events (seq)
    WHERE type = 'AppAccountTokenRegistered';

-- proj.rebuild_apple_accounts() (0047): its transactions with an appTransactionId, each then
-- joined by originalTransactionId to the claims of its chain.
CREATE INDEX events_app_transaction_id_idx ON es.events ((data->>'originalTransactionId'))
    WHERE type = 'TransactionRecorded' AND data ? 'appTransactionId';
CREATE INDEX events_chain_claimed_idx ON es.events ((data->>'originalTransactionId'))
    WHERE type = 'ChainClaimed';

-- The planner joins the two Apple-account indexes by a nested loop only when it knows how few
-- claims share an originalTransactionId: ANALYZE gathers the new expressions' statistics now.
-- Creating an index does not, and a log that changes little would not be analyzed again for long
-- (without them the rebuild hashed every ChainClaimed: 36 ms instead of 1 ms at 1M events).
-- Only a log of some size: analyzed while empty (a new database), es.events would be planned as
-- empty, and the generic plan of the ingest's read of its streams made in the first minute was a
-- sequential scan of the log, kept until autovacuum analyzed it again (FreshDatabasePlanTests).
DO $$
BEGIN
    IF EXISTS (SELECT FROM es.events OFFSET 9999) THEN
        ANALYZE es.events;
    END IF;
END
$$;
