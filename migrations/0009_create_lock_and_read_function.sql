-- es.lock_and_read: lock streams, then read streams, in one round trip. The ingest path used to
-- lock each stream with its own statement and then read with `stream_id = ANY($1)`, which the
-- plan cache re-planned on every call (a custom plan per array; a generic plan is the same index scan). Here the locks are taken in the
-- order the service uses everywhere (sorted by stream name), and the read, a later statement
-- of a volatile function, takes a fresh READ COMMITTED snapshot: it sees whatever the previous
-- holder of each lock committed. Locks assign no xid, so es.append may still follow.
CREATE FUNCTION es.lock_and_read(p_lock text[], p_read text[])
RETURNS TABLE (
    seq bigint, tx xid8, stream_id text, version bigint, type text, schema_version smallint,
    data jsonb, metadata jsonb, payload text, recorded_at_ms bigint
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_stream text;
BEGIN
    FOR v_stream IN SELECT DISTINCT s FROM unnest(p_lock) AS s ORDER BY s LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended(v_stream, 0));
    END LOOP;
    RETURN QUERY
    SELECT e.seq, e.tx, e.stream_id, e.version, e.type, e.schema_version, e.data, e.metadata, e.payload,
        floor(extract(epoch FROM e.recorded_at) * 1000)::bigint
    FROM es.events e
    WHERE e.stream_id = ANY (p_read)
    ORDER BY e.stream_id, e.version;
END
$$;

REVOKE ALL ON FUNCTION es.lock_and_read(text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION es.lock_and_read(text[], text[]) TO iap_ledger_service;
