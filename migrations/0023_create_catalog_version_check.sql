-- One catalog in force (api.md §1.1). Catalog versions are events (`CatalogVersionRecorded`) on
-- the stream `catalog`, appended through es.append like every other event; the stream's head in
-- es.streams is the version in force. This function is what keeps a document rendered under an
-- older version out of proj.users once a newer one is recorded:
--
-- Every write of proj.users calls it (in the same transaction, before the write) with the
-- version it rendered under. It takes the catalog lock in SHARE mode, then reads the head: a
-- recorder takes the same lock EXCLUSIVE before it appends a version and re-renders the users
-- it changes, so it waits for every writer that passed this check and every writer after it
-- waits for the recorder's commit and then sees the new head. A mismatch raises IC001; the
-- service reloads the catalog and redoes the unit of work (its events roll back with it).
--
-- plpgsql, VOLATILE: the read after the lock takes a fresh snapshot (READ COMMITTED), so it
-- sees a version committed while it waited. Reads only: callable after es.append.
CREATE FUNCTION es.require_catalog_version(p_version bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_head bigint;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('iap-ledger:catalog', 0));
    v_head := coalesce((SELECT s.version FROM es.streams s WHERE s.stream_id = 'catalog'), 0);
    IF v_head <> p_version THEN
        RAISE EXCEPTION 'catalog version % is in force; this write was rendered under version %', v_head, p_version
            USING ERRCODE = 'IC001';
    END IF;
END
$$;

REVOKE ALL ON FUNCTION es.require_catalog_version(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION es.require_catalog_version(bigint) TO iap_ledger_service;
