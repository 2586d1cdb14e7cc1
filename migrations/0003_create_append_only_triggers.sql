-- The log is append-only for everyone, the table owner and superusers included: privileges
-- (0005) stop the service role, this trigger stops the rest. Statement-level, so even an
-- UPDATE or DELETE matching no row is refused. SQLSTATE ES002.
CREATE FUNCTION es.refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on %.% is refused: the event log is append-only', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'ES002';
END
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON es.events
    FOR EACH STATEMENT EXECUTE FUNCTION es.refuse_change();

CREATE TRIGGER inbox_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON es.inbox
    FOR EACH STATEMENT EXECUTE FUNCTION es.refuse_change();
