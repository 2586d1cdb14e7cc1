-- An ingested event carries its ~3 KB signed JWS: base64 that pglz cannot shrink, so every
-- append paid a failed compression attempt. Store payloads uncompressed (still out of line
-- when large), which keeps the heap that replay and catch-up readers scan small: they never
-- read the payload column.
ALTER TABLE es.events ALTER COLUMN payload SET STORAGE EXTERNAL;
