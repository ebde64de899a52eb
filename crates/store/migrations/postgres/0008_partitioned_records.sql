-- Switchyard store, version 8 (PostgreSQL). SQLite's 0008 is a no-op: there,
-- retention deletes in bounded batches and incremental vacuum keeps the file
-- bounded.
--
-- request_records and request_contents become tables partitioned by time_ms,
-- one partition per UTC day, so retention drops whole days (DROP TABLE: no
-- dead tuples left for vacuum) instead of deleting rows. The store creates the
-- days ahead of time (today and the next 7, at migrate time and hourly: see
-- the store's partitions.rs); a row outside every day partition (clock skew, a
-- backfill) lands in the DEFAULT partition, which retention trims in batches.
--
-- The key must hold the partition key: (id, time_ms). A replayed record carries
-- its time_ms, so the insert's ON CONFLICT (id, time_ms) still skips it and the
-- rollups count it once.
--
-- Existing rows are copied into the new tables in this migration's transaction
-- (all or nothing; writers wait until it commits). Days of the last 40 get a
-- partition each; older rows are grouped by month (cut where the daily ones
-- begin), so a long history does not make thousands of tables in one
-- transaction. Retention reads each partition's bounds, not its name, so it
-- drops either kind once it lies wholly before the cutoff. Nothing is placed
-- past today + 7: such rows (a skewed clock) go to DEFAULT, and the store moves
-- them into their day's partition when it creates it.
--
-- Indexes are made on the parents once the rows are in (each partition gets
-- its own, built in one pass). Kept, as before: the time index (listing's
-- ORDER BY time_ms DESC, id DESC and its keyset, time filters, retention's
-- batches), (user_id, time_ms) and (project_id, time_ms) for a caller's own
-- listing, (resolved_model, time_ms) for the model filter and usage scans.
-- Provider and status filters stay unindexed: few distinct values, read along
-- the time index.

CREATE TABLE request_records_part (LIKE request_records INCLUDING DEFAULTS)
    PARTITION BY RANGE (time_ms);
CREATE TABLE request_records_default PARTITION OF request_records_part DEFAULT;
CREATE TABLE request_contents_part (LIKE request_contents INCLUDING DEFAULTS)
    PARTITION BY RANGE (time_ms);
CREATE TABLE request_contents_default PARTITION OF request_contents_part DEFAULT;

DO $$
DECLARE
    today BIGINT := floor(extract(epoch FROM now()) / 86400)::BIGINT;
    daily BIGINT := today - 40; -- the first day with a partition of its own
    span RECORD;
    suffix TEXT;
BEGIN
    FOR span IN
        WITH days AS (
            SELECT DISTINCT time_ms / 86400000 AS d FROM request_records
            UNION
            SELECT DISTINCT time_ms / 86400000 FROM request_contents
        ), months AS (
            SELECT d, date_trunc('month', to_timestamp(d * 86400) AT TIME ZONE 'UTC') AS m
            FROM days WHERE d < daily
        )
        SELECT d AS lo, d + 1 AS hi FROM days WHERE d >= daily AND d <= today + 7
        UNION
        SELECT (extract(epoch FROM m) / 86400)::BIGINT,
            least(daily, (extract(epoch FROM m + interval '1 month') / 86400)::BIGINT)
        FROM months
        ORDER BY 1
    LOOP
        suffix := to_char(to_timestamp(span.lo * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');
        IF span.hi <> span.lo + 1 THEN
            suffix := suffix || '_'
                || to_char(to_timestamp(span.hi * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');
        END IF;
        EXECUTE format('CREATE TABLE %I PARTITION OF request_records_part '
            'FOR VALUES FROM (%s) TO (%s)',
            'request_records_p' || suffix, span.lo * 86400000, span.hi * 86400000);
        EXECUTE format('CREATE TABLE %I PARTITION OF request_contents_part '
            'FOR VALUES FROM (%s) TO (%s)',
            'request_contents_p' || suffix, span.lo * 86400000, span.hi * 86400000);
    END LOOP;
END
$$;

-- Same columns, same order (LIKE): the rows go across as they are.
INSERT INTO request_records_part SELECT * FROM request_records;
INSERT INTO request_contents_part SELECT * FROM request_contents;
DROP TABLE request_records;
DROP TABLE request_contents;
ALTER TABLE request_records_part RENAME TO request_records;
ALTER TABLE request_contents_part RENAME TO request_contents;

ALTER TABLE request_records ADD PRIMARY KEY (id, time_ms);
CREATE INDEX request_records_time ON request_records (time_ms);
CREATE INDEX request_records_user_time ON request_records (user_id, time_ms);
CREATE INDEX request_records_project_time ON request_records (project_id, time_ms);
CREATE INDEX request_records_model_time ON request_records (resolved_model, time_ms);
ALTER TABLE request_contents ADD PRIMARY KEY (id, time_ms);
CREATE INDEX request_contents_time ON request_contents (time_ms);
