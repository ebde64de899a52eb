-- Switchyard store, version 2 (SQLite). Keep in step with ../postgres/0002_record_session_and_field_edits.sql.
-- A request record names the client's own session (Claude Code's), and what the
-- body sent upstream changed of the request's settings (a JSON array of strings,
-- NULL when nothing was).
ALTER TABLE request_records ADD COLUMN session_id TEXT;
ALTER TABLE request_records ADD COLUMN field_edits TEXT;
