-- Switchyard store, version 15 (SQLite). Keep in step with ../postgres/0015_record_operation.sql.
-- What a request asked for beyond a generation (`embeddings`); NULL for a
-- generation, as every record before this version was.
ALTER TABLE request_records ADD COLUMN operation TEXT;
