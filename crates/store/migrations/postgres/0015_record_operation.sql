-- Switchyard store, version 15 (PostgreSQL). Keep in step with ../sqlite/0015_record_operation.sql.
-- What a request asked for beyond a generation (`embeddings`); NULL for a
-- generation, as every record before this version was.
ALTER TABLE request_records ADD COLUMN operation TEXT;
