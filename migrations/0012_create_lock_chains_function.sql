-- proj.lock_chains: the first step of recording facts in one round trip: lock the chain streams
-- (sorted by name, as every writer does), then read their current owners under those locks
-- (a later statement of a volatile function: a fresh snapshot). It replaces one statement per
-- lock plus an `= ANY($1)` lookup that the plan cache re-planned on every call.
SET ROLE iap_ledger_service;

CREATE FUNCTION proj.lock_chains(p_lock text[], p_chains text[])
RETURNS TABLE (original_transaction_id text, user_id text)
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
    SELECT o.original_transaction_id, o.user_id FROM proj.chain_owners o
    WHERE o.original_transaction_id = ANY (p_chains);
END
$$;

RESET ROLE;
