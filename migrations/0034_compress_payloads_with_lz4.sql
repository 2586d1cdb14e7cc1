-- The signed payload of every event (a StoreKit 2 JWS is ~3 KB) passes PostgreSQL's TOAST
-- threshold and was compressed with pglz, the default: pglz_compress was 1.9 % of the whole
-- machine's CPU under the ingest bench (issue 17's profile, group commit on). lz4 compresses
-- such text several times faster, at a similar ratio for base64. Only values written from now on
-- use it; older ones stay readable as they are. The documents and the feed's copies of them pass
-- the threshold for users with many chains, so they follow (the replay's rebuilt proj.users
-- copies the setting: LIKE … INCLUDING COMPRESSION).
ALTER TABLE es.events ALTER COLUMN payload SET COMPRESSION lz4;
ALTER TABLE proj.users ALTER COLUMN document SET COMPRESSION lz4;
ALTER TABLE changes.feed ALTER COLUMN customer SET COMPRESSION lz4;
