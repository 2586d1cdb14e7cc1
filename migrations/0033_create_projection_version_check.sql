-- Rolling upgrades (issue 16): an instance whose code renders an older version of the `users`
-- projection than the database holds (a newer instance rebuilt it) must not store a document,
-- or a chain owner, under its old rules. Its version watch stops it within a poll interval;
-- this function closes the gap between the poll and the rebuild's swap, in the write's own
-- transaction.
--
-- Every write of proj.users / proj.chain_owners calls it instead of es.require_catalog_version
-- (same place, same round trip): it locks proj.users in ACCESS SHARE mode, does the catalog check
-- (or none without a catalog version), then reads the built version of `users`. The replay's swap
-- takes proj.users in ACCESS EXCLUSIVE mode and records the new version before it commits, so a
-- writer that passed this check holds a lock the swap waits for (it commits first, and the swap,
-- folding the log to its end under its locks, re-renders what it wrote), and a writer after the
-- swap's lock waits for its commit, then reads the new version (plpgsql, VOLATILE: each statement
-- takes a fresh snapshot under READ COMMITTED; the lock resolves the name again, to the new table).
-- Most writers already hold that lock from reading proj.users earlier in the transaction; a weak
-- table lock is taken on PostgreSQL's fast path, memory only. The check writes nothing: no row
-- lock (a FOR SHARE on the version row would dirty that row, create a MultiXact per concurrent
-- writer and make a read-only check flush WAL), and one primary-key lookup of a two-row table.
--
-- IC002, DETAIL = the database's version: the code is older than the database; the service
-- answers 503 projection_version_ahead and nothing of the transaction is kept.
-- A database version OLDER than the code's passes: that instance is the new one (it rebuilt
-- before serving, or an operator replayed the database back with older code on purpose).
CREATE FUNCTION es.require_projection_version(p_users_version integer, p_catalog_version bigint)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_built integer;
BEGIN
    LOCK TABLE proj.users IN ACCESS SHARE MODE;
    IF p_catalog_version IS NOT NULL THEN
        PERFORM es.require_catalog_version(p_catalog_version);
    END IF;
    v_built := (SELECT v.version FROM proj.projection_versions v WHERE v.name = 'users');
    IF v_built > p_users_version THEN
        RAISE EXCEPTION 'the users projection is at version % in the database; this write was rendered by code of version %',
            v_built, p_users_version
            USING ERRCODE = 'IC002', DETAIL = v_built::text;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION es.require_projection_version(integer, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION es.require_projection_version(integer, bigint) TO iap_ledger_service;
