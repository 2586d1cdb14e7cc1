-- The runtime role. Connections log in as the admin user and `SET ROLE iap_ledger_service`,
-- so everything the service does is limited to what this role is granted (see 0005).
-- Roles are cluster-wide: this migration runs once per database, so it must tolerate the role
-- already existing, even when another database's migration creates it concurrently.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'iap_ledger_service') THEN
        BEGIN
            CREATE ROLE iap_ledger_service NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    IF NOT pg_catalog.pg_has_role(CURRENT_USER, 'iap_ledger_service', 'MEMBER') THEN
        GRANT iap_ledger_service TO CURRENT_USER;
    END IF;
END
$$;
