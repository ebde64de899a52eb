-- Switchyard store, version 4 (SQLite). Keep in step with ../postgres/0004_record_cache.sql.
-- How the response cache took part in a request: hit, miss or coalesced; NULL
-- when the request was not cached. (Version 3 is the key limits' migration.)
ALTER TABLE request_records ADD COLUMN cache TEXT;
