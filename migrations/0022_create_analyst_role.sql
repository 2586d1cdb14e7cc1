-- The analysts' role: reads the analytics schema and nothing else (no es, proj or auth; no
-- writes). NOLOGIN: giving it a login (or granting it to a login role) is the operator's call.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'iap_analyst') THEN
        BEGIN
            CREATE ROLE iap_analyst NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    IF NOT pg_catalog.pg_has_role(CURRENT_USER, 'iap_analyst', 'MEMBER') THEN
        GRANT iap_analyst TO CURRENT_USER;
    END IF;
END
$$;

REVOKE ALL ON SCHEMA analytics FROM PUBLIC;
GRANT USAGE ON SCHEMA analytics TO iap_analyst;
GRANT SELECT ON ALL TABLES IN SCHEMA analytics TO iap_analyst;   -- tables and views
GRANT EXECUTE ON FUNCTION analytics.user_documents() TO iap_analyst;
GRANT EXECUTE ON FUNCTION analytics.ms(bigint) TO iap_analyst;
