-- Switchyard store, version 5 (SQLite). Keep in step with ../postgres/0005_rollups.sql.
-- Hourly rollups of request_records, kept as records are written (in the same
-- transaction, from the records the insert took: a replayed record adds
-- nothing). Analytics and usage read them instead of scanning every record.
-- A dimension a record has none of is '' (a key column cannot be NULL).
CREATE TABLE request_rollups (
    hour_ms            BIGINT NOT NULL,
    model              TEXT NOT NULL, -- the resolved model, else the requested one
    provider           TEXT NOT NULL, -- the provider that served it
    project_id         TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    key_prefix         TEXT NOT NULL,
    requests           BIGINT NOT NULL,
    errors             BIGINT NOT NULL, -- status >= 400 or an error code
    failovers          BIGINT NOT NULL, -- served after failing over
    cache_hits         BIGINT NOT NULL, -- answered from the response cache
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    costed             BIGINT NOT NULL, -- requests with a known cost
    cost_usd           DOUBLE PRECISION NOT NULL,
    total_ms_sum       BIGINT NOT NULL,
    ttft_count         BIGINT NOT NULL,
    ttft_ms_sum        BIGINT NOT NULL,
    PRIMARY KEY (hour_ms, model, provider, project_id, user_id, key_prefix)
);
-- The same groups' latency histograms: how many requests fell in each bucket
-- (metric 0: the whole request, 1: time to first token; bucket: 8 per doubling
-- of milliseconds, see the store's rollups.rs).
CREATE TABLE request_rollup_latency (
    hour_ms    BIGINT NOT NULL,
    model      TEXT NOT NULL,
    provider   TEXT NOT NULL,
    project_id TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    key_prefix TEXT NOT NULL,
    metric     BIGINT NOT NULL,
    bucket     BIGINT NOT NULL,
    count      BIGINT NOT NULL,
    PRIMARY KEY (hour_ms, model, provider, project_id, user_id, key_prefix, metric, bucket)
);
