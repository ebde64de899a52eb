-- Switchyard store, version 8 (SQLite): nothing to do. PostgreSQL's 0008
-- partitions the request tables by day so retention drops whole days; SQLite
-- has no partitions: retention deletes in bounded batches there, and
-- incremental vacuum hands the freed pages back (the store's records.rs). The
-- version exists so both backends count the same migrations.
SELECT 1;
