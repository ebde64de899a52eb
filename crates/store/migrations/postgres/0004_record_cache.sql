-- Switchyard store, version 4 (PostgreSQL). Keep in step with ../sqlite/0004_record_cache.sql.
-- How the response cache took part in a request: hit, miss or coalesced; NULL
-- when the request was not cached. (Version 3 is the key limits' migration.)
ALTER TABLE request_records ADD COLUMN cache TEXT;
