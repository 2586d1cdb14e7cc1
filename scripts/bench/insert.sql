-- pgbench baseline for ingest: one durable single-row INSERT per transaction.
-- usage: pgbench -n -M prepared -f scripts/bench/insert.sql -c 32 -j 2 -T 10 pgbench
\set id random(1, 1000000000)
INSERT INTO bench_insert (id, created_at, payload) VALUES (:id, now(), 'iap-ledger bench: one row per transaction');
