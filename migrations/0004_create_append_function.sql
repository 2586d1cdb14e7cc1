-- es.append: append events to one or more streams atomically, guarded by per-stream expected
-- versions and an optional idempotency key (eventstore.md §1.1, §6).
--
-- Order of work, which is what makes (tx, seq) order equal version order within a stream:
--   1. refuse if the transaction already has an xid (an earlier write): ES001;
--   2. take pg_advisory_xact_lock for every stream and for the idempotency key, sorted by lock
--      key (one global order, so concurrent multi-stream appends cannot deadlock); advisory
--      locks assign no xid;
--   3. look up the inbox, then the stream heads (each statement takes a fresh READ COMMITTED
--      snapshot, so it sees whatever the previous lock holder committed);
--   4. only then write: inbox row, events, stream heads (the first write assigns the xid).
-- Duplicate and conflict are answered as rows, not errors, and write nothing, so the
-- transaction is still usable; the caller normally rolls back and retries its unit of work.
--
-- Arguments: p_streams (distinct) with p_expected (NULL = any version, 0 = stream must not
-- exist, n = head must be n); events as parallel arrays in append order, p_event_streams[i]
-- naming the stream of event i. Answers 'appended' rows (one per event: stream_id, seq, tx,
-- version, recorded_at), or one 'duplicate' row, or one 'conflict' row (stream_id, expected,
-- actual).
CREATE FUNCTION es.append(
    p_streams text[],
    p_expected bigint[],
    p_source text,
    p_external_id text,
    p_event_streams text[],
    p_types text[],
    p_schema_versions smallint[],
    p_data jsonb[],
    p_metadata jsonb[],
    p_payloads text[]
) RETURNS TABLE (
    status text, stream_id text, expected bigint, actual bigint,
    seq bigint, tx xid8, version bigint, recorded_at timestamptz
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_key bigint;
    v_head bigint;
    v_heads bigint[] := '{}';
    v_now timestamptz;
    n_events int := coalesce(cardinality(p_event_streams), 0);
BEGIN
    IF pg_current_xact_id_if_assigned() IS NOT NULL THEN
        RAISE EXCEPTION 'es.append must be the first write of its transaction' USING ERRCODE = 'ES001';
    END IF;
    IF coalesce(cardinality(p_streams), 0) = 0
        OR cardinality(p_expected) IS DISTINCT FROM cardinality(p_streams)
        OR n_events = 0
        OR cardinality(p_types) IS DISTINCT FROM n_events
        OR cardinality(p_schema_versions) IS DISTINCT FROM n_events
        OR cardinality(p_data) IS DISTINCT FROM n_events
        OR cardinality(p_metadata) IS DISTINCT FROM n_events
        OR cardinality(p_payloads) IS DISTINCT FROM n_events
        OR (SELECT count(DISTINCT s) FROM unnest(p_streams) AS s) <> cardinality(p_streams)
        OR EXISTS (SELECT FROM unnest(p_event_streams) AS e WHERE e IS NULL OR e <> ALL (p_streams))
        OR (p_source IS NULL) <> (p_external_id IS NULL)
    THEN
        RAISE EXCEPTION 'es.append: malformed arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    FOR v_key IN
        SELECT DISTINCT k FROM (
            SELECT hashtextextended(s, 0) AS k FROM unnest(p_streams) AS s
            UNION ALL
            SELECT hashtextextended('inbox:' || p_source || ':' || p_external_id, 0) WHERE p_source IS NOT NULL
        ) AS keys
        ORDER BY k
    LOOP
        PERFORM pg_advisory_xact_lock(v_key);
    END LOOP;

    IF p_source IS NOT NULL
        AND EXISTS (SELECT FROM es.inbox i WHERE i.source = p_source AND i.external_id = p_external_id)
    THEN
        RETURN QUERY SELECT 'duplicate'::text, NULL::text, NULL::bigint, NULL::bigint,
            NULL::bigint, NULL::xid8, NULL::bigint, NULL::timestamptz;
        RETURN;
    END IF;

    FOR i IN 1 .. cardinality(p_streams) LOOP
        v_head := coalesce((SELECT s.version FROM es.streams s WHERE s.stream_id = p_streams[i]), 0);
        IF p_expected[i] IS NOT NULL AND p_expected[i] <> v_head THEN
            RETURN QUERY SELECT 'conflict'::text, p_streams[i], p_expected[i], v_head,
                NULL::bigint, NULL::xid8, NULL::bigint, NULL::timestamptz;
            RETURN;
        END IF;
        v_heads := v_heads || v_head;
    END LOOP;

    -- Taken after the locks: recorded_at never goes backwards along a stream.
    v_now := clock_timestamp();

    IF p_source IS NOT NULL THEN
        INSERT INTO es.inbox (source, external_id, stream_id, version, recorded_at)
        SELECT p_source, p_external_id, p_event_streams[1],
            v_heads[array_position(p_streams, p_event_streams[1])]
                + (SELECT count(*) FROM unnest(p_event_streams) AS e WHERE e = p_event_streams[1]),
            v_now;
    END IF;

    RETURN QUERY
    WITH numbered AS (
        SELECT e.stream, e.ord, e.type, e.schema_version, e.data, e.metadata, e.payload,
            h.head + row_number() OVER (PARTITION BY e.stream ORDER BY e.ord) AS version
        FROM unnest(p_event_streams, p_types, p_schema_versions, p_data, p_metadata, p_payloads)
            WITH ORDINALITY AS e(stream, type, schema_version, data, metadata, payload, ord)
        JOIN unnest(p_streams, v_heads) AS h(stream, head) ON h.stream = e.stream
    ), inserted AS (
        INSERT INTO es.events (stream_id, version, type, schema_version, data, metadata, payload, recorded_at)
        SELECT n.stream, n.version, n.type, coalesce(n.schema_version, 1), n.data,
            coalesce(n.metadata, '{}'), n.payload, v_now
        FROM numbered n
        ORDER BY n.ord
        RETURNING es.events.seq, es.events.tx, es.events.stream_id, es.events.version, es.events.recorded_at
    ), heads AS (
        INSERT INTO es.streams AS s (stream_id, version, updated_at)
        SELECT n.stream, max(n.version), v_now FROM numbered n GROUP BY n.stream
        ON CONFLICT ON CONSTRAINT streams_pkey
            DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at
    )
    SELECT 'appended'::text, ins.stream_id, NULL::bigint, NULL::bigint, ins.seq, ins.tx, ins.version, ins.recorded_at
    FROM inserted ins
    ORDER BY ins.seq;
END
$$;
