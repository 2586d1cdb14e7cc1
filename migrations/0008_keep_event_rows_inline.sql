-- Keep an event row in its heap page, uncompressed, up to the page size. An ingested event
-- carries its ~3 KB signed JWS: base64 that pglz cannot shrink, so with the default target
-- (~2 KB) every append paid a failed compression attempt and then wrote the payload out of
-- line to the TOAST table (two chunks and their index entries). Rows over ~8 KB (large
-- verifyReceipt bodies) are still compressed or moved out of line as before.
ALTER TABLE es.events SET (toast_tuple_target = 8160);
