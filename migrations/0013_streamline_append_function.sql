-- es.append, leaner: same signature, same answers, same order of work as 0004 (ES001 unless
-- first write; every lock, sorted by key, before any read; inbox row, events and heads written
-- only after the checks). Recording a purchase calls it once, and it was a third of
-- PostgreSQL's CPU there: every SQL statement a plpgsql function runs pays an executor
-- start-up, and statements over unnest() of array arguments are planned anew on every call
-- (the plan cache cannot know the arrays' lengths, so a generic plan always looks dearer).
-- Here:
--   * the argument checks are plain expressions, which plpgsql evaluates without the executor;
--   * the lock keys are sorted in plpgsql, not by a query;
--   * each event and each stream head is one single-row statement with a plan cached for the
--     session. Their plans cannot depend on table sizes (inserts, and primary-key lookups the
--     plan cache keeps generic under 0004 too), so nothing here gets slower as the log grows.
-- No plan_cache_mode override: a generic plan forced for a query that reads a table would be
-- made once per session, possibly while the table is still small, and kept.
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
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_key bigint;
    v_keys bigint[];
    v_head bigint;
    v_heads bigint[];
    v_next bigint[];
    v_now timestamptz;
    v_pos int;
    v_seq bigint;
    v_tx xid8;
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
    THEN
        RAISE EXCEPTION 'es.append: malformed arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- No stream twice (array_position finds the first occurrence).
    FOR i IN 2 .. n_streams LOOP
        IF array_position(p_streams, p_streams[i]) <> i THEN
            RAISE EXCEPTION 'es.append: malformed arguments' USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;

    -- Lock keys of the streams and of the idempotency key, sorted (an insertion sort: a unit of
    -- work appends to a handful of streams). A key twice is harmless: the locks are re-entrant.
    v_keys := '{}';
    FOR i IN 1 .. n_streams + (CASE WHEN p_source IS NULL THEN 0 ELSE 1 END) LOOP
        v_key := CASE WHEN i <= n_streams THEN hashtextextended(p_streams[i], 0)
                      ELSE hashtextextended('inbox:' || p_source || ':' || p_external_id, 0) END;
        v_keys := v_keys || v_key;
    END LOOP;
    FOR i IN 2 .. cardinality(v_keys) LOOP
        v_key := v_keys[i];
        v_pos := i - 1;
        WHILE v_pos >= 1 AND v_keys[v_pos] > v_key LOOP
            v_keys[v_pos + 1] := v_keys[v_pos];
            v_pos := v_pos - 1;
        END LOOP;
        v_keys[v_pos + 1] := v_key;
    END LOOP;
    FOREACH v_key IN ARRAY v_keys LOOP
        PERFORM pg_advisory_xact_lock(v_key);
    END LOOP;

    IF p_source IS NOT NULL
        AND EXISTS (SELECT FROM es.inbox i WHERE i.source = p_source AND i.external_id = p_external_id)
    THEN
        RETURN QUERY SELECT 'duplicate'::text, NULL::text, NULL::bigint, NULL::bigint,
            NULL::bigint, NULL::xid8, NULL::bigint, NULL::timestamptz;
        RETURN;
    END IF;

    v_heads := '{}';
    FOR i IN 1 .. n_streams LOOP
        v_head := coalesce((SELECT s.version FROM es.streams s WHERE s.stream_id = p_streams[i]), 0);
        IF p_expected[i] IS NOT NULL AND p_expected[i] <> v_head THEN
            RETURN QUERY SELECT 'conflict'::text, p_streams[i], p_expected[i], v_head,
                NULL::bigint, NULL::xid8, NULL::bigint, NULL::timestamptz;
            RETURN;
        END IF;
        v_heads := v_heads || v_head;
    END LOOP;
    v_next := v_heads;

    -- Taken after the locks: recorded_at never goes backwards along a stream.
    v_now := clock_timestamp();

    IF p_source IS NOT NULL THEN
        INSERT INTO es.inbox (source, external_id, stream_id, version, recorded_at)
        SELECT p_source, p_external_id, p_event_streams[1],
            v_heads[array_position(p_streams, p_event_streams[1])]
                + (SELECT count(*) FROM unnest(p_event_streams) AS e WHERE e = p_event_streams[1]),
            v_now;
    END IF;

    -- One row per event, in append order (so in seq order), as 0004 answers them.
    status := 'appended';
    recorded_at := v_now;
    FOR i IN 1 .. n_events LOOP
        v_pos := array_position(p_streams, p_event_streams[i]);
        v_next[v_pos] := v_next[v_pos] + 1;
        INSERT INTO es.events AS e (stream_id, version, type, schema_version, data, metadata, payload, recorded_at)
        VALUES (p_event_streams[i], v_next[v_pos], p_types[i], coalesce(p_schema_versions[i], 1), p_data[i],
            coalesce(p_metadata[i], '{}'), p_payloads[i], v_now)
        RETURNING e.seq, e.tx INTO v_seq, v_tx;
        stream_id := p_event_streams[i];
        seq := v_seq;
        tx := v_tx;
        version := v_next[v_pos];
        RETURN NEXT;
    END LOOP;
    FOR i IN 1 .. n_streams LOOP
        IF v_next[i] > v_heads[i] THEN
            INSERT INTO es.streams AS s (stream_id, version, updated_at) VALUES (p_streams[i], v_next[i], v_now)
            ON CONFLICT ON CONSTRAINT streams_pkey DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at;
        END IF;
    END LOOP;
END
$$;
