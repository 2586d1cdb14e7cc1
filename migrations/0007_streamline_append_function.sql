-- es.append, leaner (same signature, same answers, same order of work as 0004): the ingest path
-- calls it once per purchase and it was a third of PostgreSQL's CPU there. Each statement a
-- plpgsql function runs through SPI pays an executor start-up; 0004 ran one per check, per lock
-- loop, per stream head and a window-function CTE. Here:
--   * the argument checks are plain expressions (plpgsql evaluates those without the executor),
--     with a subquery only for three or more streams;
--   * the inbox is only looked up when there is an idempotency key;
--   * every stream head is read in one statement (after the locks, so a fresh snapshot);
--   * versions are numbered in plpgsql, so the insert is a plain unnest.
-- Unchanged: ES001 unless first write; locks on every stream and the inbox key, sorted by key,
-- before any read; inbox row, events and heads written only after the checks.
CREATE OR REPLACE FUNCTION es.append(
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
LANGUAGE plpgsql
-- Plan each inner statement once per session: with array arguments the plan cache otherwise
-- keeps re-planning them per call (custom plans), which cost as much as running them.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_key bigint;
    v_heads bigint[];
    v_next bigint[];
    v_versions bigint[];
    v_now timestamptz;
    v_pos int;
    n_streams int := coalesce(cardinality(p_streams), 0);
    n_events int := coalesce(cardinality(p_event_streams), 0);
BEGIN
    IF pg_current_xact_id_if_assigned() IS NOT NULL THEN
        RAISE EXCEPTION 'es.append must be the first write of its transaction' USING ERRCODE = 'ES001';
    END IF;
    IF n_streams = 0
        OR cardinality(p_expected) IS DISTINCT FROM n_streams
        OR n_events = 0
        OR cardinality(p_types) IS DISTINCT FROM n_events
        OR cardinality(p_schema_versions) IS DISTINCT FROM n_events
        OR cardinality(p_data) IS DISTINCT FROM n_events
        OR cardinality(p_metadata) IS DISTINCT FROM n_events
        OR cardinality(p_payloads) IS DISTINCT FROM n_events
        OR array_position(p_streams, NULL) IS NOT NULL
        OR (p_event_streams <@ p_streams) IS NOT TRUE      -- false on a NULL element
        OR (p_source IS NULL) <> (p_external_id IS NULL)
        OR (n_streams = 2 AND p_streams[1] = p_streams[2])
    THEN
        RAISE EXCEPTION 'es.append: malformed arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF n_streams > 2 THEN
        IF (SELECT count(DISTINCT s) FROM unnest(p_streams) AS s) <> n_streams THEN
            RAISE EXCEPTION 'es.append: malformed arguments' USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    IF n_streams = 1 AND p_source IS NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(p_streams[1], 0));
    ELSE
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
    END IF;

    IF p_source IS NOT NULL THEN
        IF EXISTS (SELECT FROM es.inbox i WHERE i.source = p_source AND i.external_id = p_external_id) THEN
            RETURN QUERY SELECT 'duplicate'::text, NULL::text, NULL::bigint, NULL::bigint,
                NULL::bigint, NULL::xid8, NULL::bigint, NULL::timestamptz;
            RETURN;
        END IF;
    END IF;

    -- One statement, after the locks: it sees whatever the previous lock holder committed.
    -- (a correlated lookup per stream: an index probe each, never a join plan over es.streams)
    v_heads := ARRAY(
        SELECT coalesce((SELECT s.version FROM es.streams s WHERE s.stream_id = x.id), 0)
        FROM unnest(p_streams) WITH ORDINALITY AS x(id, o)
        ORDER BY x.o);

    FOR i IN 1 .. n_streams LOOP
        IF p_expected[i] IS NOT NULL AND p_expected[i] <> v_heads[i] THEN
            RETURN QUERY SELECT 'conflict'::text, p_streams[i], p_expected[i], v_heads[i],
                NULL::bigint, NULL::xid8, NULL::bigint, NULL::timestamptz;
            RETURN;
        END IF;
    END LOOP;

    v_next := v_heads;
    v_versions := array_fill(0::bigint, ARRAY[n_events]);
    FOR i IN 1 .. n_events LOOP
        v_pos := array_position(p_streams, p_event_streams[i]);
        v_next[v_pos] := v_next[v_pos] + 1;
        v_versions[i] := v_next[v_pos];
    END LOOP;

    -- Taken after the locks: recorded_at never goes backwards along a stream.
    v_now := clock_timestamp();

    IF p_source IS NOT NULL THEN
        v_pos := array_position(p_streams, p_event_streams[1]);
        INSERT INTO es.inbox (source, external_id, stream_id, version, recorded_at)
        VALUES (p_source, p_external_id, p_event_streams[1], v_next[v_pos], v_now);
    END IF;

    RETURN QUERY
    WITH inserted AS (
        INSERT INTO es.events (stream_id, version, type, schema_version, data, metadata, payload, recorded_at)
        SELECT e.stream, e.version, e.type, coalesce(e.schema_version, 1), e.data,
            coalesce(e.metadata, '{}'), e.payload, v_now
        FROM unnest(p_event_streams, v_versions, p_types, p_schema_versions, p_data, p_metadata, p_payloads)
            WITH ORDINALITY AS e(stream, version, type, schema_version, data, metadata, payload, ord)
        ORDER BY e.ord
        RETURNING es.events.seq, es.events.tx, es.events.stream_id, es.events.version, es.events.recorded_at
    ), heads AS (
        INSERT INTO es.streams AS s (stream_id, version, updated_at)
        SELECT h.stream, h.next, v_now
        FROM unnest(p_streams, v_heads, v_next) AS h(stream, head, next)
        WHERE h.next > h.head
        ON CONFLICT ON CONSTRAINT streams_pkey
            DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at
    )
    SELECT 'appended'::text, ins.stream_id, NULL::bigint, NULL::bigint, ins.seq, ins.tx, ins.version, ins.recorded_at
    FROM inserted ins
    ORDER BY ins.seq;
END
$$;
