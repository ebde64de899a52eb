-- Switchyard store, version 11 (PostgreSQL). Keep in step with ../sqlite/0011_rollup_slices.sql.
-- Rollups by one dimension at a time, by the hour and by the UTC day; every
-- rollup row holding its latency histograms inline.
--
-- request_rollups is keyed by every dimension at once (hour, model, provider,
-- project, user, key), which with hundreds of keys holds about a row per seven
-- records, and request_rollup_latency had a row per bucket of each: a month's
-- usage by model read millions of rows. A slice holds one row per value of
-- one dimension per hour or day (a month by model: 20 models x 30 days), so an
-- unfiltered report reads a few thousand. The fine rollups stay for reports
-- filtered on one dimension and grouped by another, their histograms now in
-- the row (a tenth of the rows read, and of the bytes stored).
--
-- dimension: 'model', 'provider', 'project', 'user', 'key', or '' for all the
-- traffic (value ''). A record without a value of the dimension counts under
-- value ''. latency / ttft: the histogram of the whole request's time and of
-- the time to first token, "bucket:count" pairs separated by spaces (8 buckets
-- per doubling of milliseconds; the store's rollups.rs).
CREATE TABLE request_rollup_slices (
    span_ms            BIGINT NOT NULL, -- 3600000 (an hour) or 86400000 (a UTC day)
    dimension          TEXT NOT NULL,
    start_ms           BIGINT NOT NULL,
    value              TEXT NOT NULL,
    requests           BIGINT NOT NULL,
    errors             BIGINT NOT NULL,
    failovers          BIGINT NOT NULL,
    cache_hits         BIGINT NOT NULL,
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    costed             BIGINT NOT NULL,
    cost_usd           DOUBLE PRECISION NOT NULL,
    total_ms_sum       BIGINT NOT NULL,
    ttft_count         BIGINT NOT NULL,
    ttft_ms_sum        BIGINT NOT NULL,
    latency            TEXT NOT NULL,
    ttft               TEXT NOT NULL,
    PRIMARY KEY (span_ms, dimension, start_ms, value)
);
-- The slices of what is already rolled up, in this transaction: the hours
-- from the fine rollups, then the days from the hours.
CREATE TEMP TABLE slice_dimensions (dimension TEXT NOT NULL);
INSERT INTO slice_dimensions VALUES (''), ('model'), ('provider'), ('project'), ('user'), ('key');
CREATE TEMP TABLE slice_cells AS
SELECT 3600000 AS span_ms, d.dimension AS dimension, l.hour_ms AS start_ms,
    CASE d.dimension WHEN 'model' THEN l.model WHEN 'provider' THEN l.provider
        WHEN 'project' THEN l.project_id WHEN 'user' THEN l.user_id
        WHEN 'key' THEN l.key_prefix ELSE '' END AS value,
    l.metric AS metric, l.bucket AS bucket, CAST(SUM(l.count) AS BIGINT) AS n
FROM request_rollup_latency l, slice_dimensions d
GROUP BY 1, 2, 3, 4, 5, 6;
INSERT INTO slice_cells (span_ms, dimension, start_ms, value, metric, bucket, n)
SELECT 86400000, dimension, start_ms - (start_ms % 86400000), value, metric, bucket,
    CAST(SUM(n) AS BIGINT)
FROM slice_cells GROUP BY 1, 2, 3, 4, 5, 6;
CREATE TEMP TABLE slice_histograms AS
SELECT span_ms, dimension, start_ms, value, metric, string_agg(bucket || ':' || n, ' ' ORDER BY bucket) AS histogram
FROM slice_cells GROUP BY 1, 2, 3, 4, 5;
CREATE TEMP TABLE slice_sums AS
SELECT 3600000 AS span_ms, d.dimension AS dimension, r.hour_ms AS start_ms,
    CASE d.dimension WHEN 'model' THEN r.model WHEN 'provider' THEN r.provider
        WHEN 'project' THEN r.project_id WHEN 'user' THEN r.user_id
        WHEN 'key' THEN r.key_prefix ELSE '' END AS value,
        CAST(SUM(r.requests) AS BIGINT) AS requests,
        CAST(SUM(r.errors) AS BIGINT) AS errors,
        CAST(SUM(r.failovers) AS BIGINT) AS failovers,
        CAST(SUM(r.cache_hits) AS BIGINT) AS cache_hits,
        CAST(SUM(r.input_tokens) AS BIGINT) AS input_tokens,
        CAST(SUM(r.output_tokens) AS BIGINT) AS output_tokens,
        CAST(SUM(r.cache_read_tokens) AS BIGINT) AS cache_read_tokens,
        CAST(SUM(r.cache_write_tokens) AS BIGINT) AS cache_write_tokens,
        CAST(SUM(r.costed) AS BIGINT) AS costed,
        SUM(r.cost_usd) AS cost_usd,
        CAST(SUM(r.total_ms_sum) AS BIGINT) AS total_ms_sum,
        CAST(SUM(r.ttft_count) AS BIGINT) AS ttft_count,
        CAST(SUM(r.ttft_ms_sum) AS BIGINT) AS ttft_ms_sum
FROM request_rollups r, slice_dimensions d
GROUP BY 1, 2, 3, 4;
INSERT INTO slice_sums (span_ms, dimension, start_ms, value, requests, errors, failovers, cache_hits, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, costed, cost_usd, total_ms_sum, ttft_count, ttft_ms_sum)
SELECT 86400000, dimension, start_ms - (start_ms % 86400000), value,
        CAST(SUM(requests) AS BIGINT) AS requests,
        CAST(SUM(errors) AS BIGINT) AS errors,
        CAST(SUM(failovers) AS BIGINT) AS failovers,
        CAST(SUM(cache_hits) AS BIGINT) AS cache_hits,
        CAST(SUM(input_tokens) AS BIGINT) AS input_tokens,
        CAST(SUM(output_tokens) AS BIGINT) AS output_tokens,
        CAST(SUM(cache_read_tokens) AS BIGINT) AS cache_read_tokens,
        CAST(SUM(cache_write_tokens) AS BIGINT) AS cache_write_tokens,
        CAST(SUM(costed) AS BIGINT) AS costed,
        SUM(cost_usd) AS cost_usd,
        CAST(SUM(total_ms_sum) AS BIGINT) AS total_ms_sum,
        CAST(SUM(ttft_count) AS BIGINT) AS ttft_count,
        CAST(SUM(ttft_ms_sum) AS BIGINT) AS ttft_ms_sum
FROM slice_sums GROUP BY 1, 2, 3, 4;
INSERT INTO request_rollup_slices (span_ms, dimension, start_ms, value, requests, errors, failovers, cache_hits, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, costed, cost_usd, total_ms_sum, ttft_count, ttft_ms_sum,
    latency, ttft)
SELECT g.span_ms, g.dimension, g.start_ms, g.value, g.requests, g.errors, g.failovers, g.cache_hits, g.input_tokens, g.output_tokens, g.cache_read_tokens, g.cache_write_tokens, g.costed, g.cost_usd, g.total_ms_sum, g.ttft_count, g.ttft_ms_sum,
    COALESCE(l.histogram, ''), COALESCE(t.histogram, '')
FROM slice_sums g
LEFT JOIN slice_histograms l ON l.span_ms = g.span_ms AND l.dimension = g.dimension
    AND l.start_ms = g.start_ms AND l.value = g.value AND l.metric = 0
LEFT JOIN slice_histograms t ON t.span_ms = g.span_ms AND t.dimension = g.dimension
    AND t.start_ms = g.start_ms AND t.value = g.value AND t.metric = 1;
DROP TABLE slice_sums;
DROP TABLE slice_histograms;
DROP TABLE slice_cells;
DROP TABLE slice_dimensions;
-- The fine rollups' histograms move inline.
ALTER TABLE request_rollups ADD COLUMN latency TEXT NOT NULL DEFAULT '';
ALTER TABLE request_rollups ADD COLUMN ttft TEXT NOT NULL DEFAULT '';
-- Filled from request_rollup_latency, which then goes; both columns in one
-- UPDATE (on PostgreSQL each UPDATE of a row leaves a dead version of it).
CREATE TEMP TABLE fine_histograms AS
SELECT hour_ms, model, provider, project_id, user_id, key_prefix,
    COALESCE(string_agg(CASE WHEN metric = 0 THEN bucket || ':' || count END, ' ' ORDER BY bucket), '') AS latency,
    COALESCE(string_agg(CASE WHEN metric = 1 THEN bucket || ':' || count END, ' ' ORDER BY bucket), '') AS ttft
FROM request_rollup_latency GROUP BY 1, 2, 3, 4, 5, 6;
CREATE INDEX fine_histograms_key ON fine_histograms
    (hour_ms, model, provider, project_id, user_id, key_prefix);
UPDATE request_rollups SET latency = f.latency, ttft = f.ttft FROM fine_histograms f
WHERE f.hour_ms = request_rollups.hour_ms AND f.model = request_rollups.model
    AND f.provider = request_rollups.provider AND f.project_id = request_rollups.project_id
    AND f.user_id = request_rollups.user_id AND f.key_prefix = request_rollups.key_prefix;
DROP TABLE fine_histograms;
DROP TABLE request_rollup_latency;
