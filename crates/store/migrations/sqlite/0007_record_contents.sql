-- Switchyard store, version 7 (SQLite). Keep in step with ../postgres/0007_record_contents.sql.
-- The request and response content a project logs, deflate-compressed and apart
-- from the record row: listing, usage and retention's scans never read it, and
-- the record table stays narrow. (request_records.content still holds what
-- earlier versions wrote.)
CREATE TABLE request_contents (
    id      TEXT PRIMARY KEY, -- the record's
    time_ms BIGINT NOT NULL,
    content BLOB NOT NULL
);
CREATE INDEX request_contents_time ON request_contents (time_ms);
