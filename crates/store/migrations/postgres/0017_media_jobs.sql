-- Switchyard store, version 17 (PostgreSQL). Keep in step with ../sqlite/0017_media_jobs.sql.
-- Media jobs (POST /v1/jobs) on a provider's queue, per owner (the gateway key
-- that submitted them): the whole job as deflated JSON, with what the pollers
-- select on beside it. An unended job (final = 0) is polled by whichever
-- instance claims it first (lease_until_ms); an ended one is read until
-- expires_ms.
CREATE TABLE media_jobs (
    id             TEXT    NOT NULL PRIMARY KEY,
    owner          TEXT    NOT NULL,
    final          INTEGER NOT NULL,
    next_poll_ms   BIGINT  NOT NULL,
    lease_until_ms BIGINT  NOT NULL,
    expires_ms     BIGINT  NOT NULL,
    body           BYTEA   NOT NULL
);
CREATE INDEX media_jobs_due ON media_jobs (final, next_poll_ms);
CREATE INDEX media_jobs_expiry ON media_jobs (expires_ms);
