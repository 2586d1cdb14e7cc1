-- Every write of a user's document records the transaction that made it, so a service process
-- that caches documents in memory can ask "which documents did transactions that committed since
-- my last check change?" with one indexed range scan, and stay exact when several processes
-- share this database. The transaction id (not a timestamp, not a sequence) is what makes the
-- question answerable: every transaction that commits after a snapshot has an id at or above
-- that snapshot's xmin, so "changed_tx >= previous xmin" never misses a commit.
--
-- NOTIFY would push the same facts, but a transaction that NOTIFYs holds a database-wide lock
-- through its commit, which would serialise every purchase's durable commit (no group commit).
--
-- Writers: a new row takes the default; an update must set `changed_tx = DEFAULT`.
SET ROLE iap_ledger_service;

ALTER TABLE proj.users ADD COLUMN changed_tx xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX users_changed_tx_idx ON proj.users (changed_tx);

RESET ROLE;
