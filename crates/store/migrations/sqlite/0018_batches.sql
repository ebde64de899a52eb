-- Switchyard store, version 18 (SQLite). Keep in step with ../postgres/0018_batches.sql.
-- Batches (/v1/files, /v1/batches), per owner (the gateway key that made
-- them). Files hold their content deflated; a batch is its whole state as
-- deflated JSON, with what the runners select on beside it (final = 0: still
-- to run or finish, held by whichever instance's lease_until_ms is latest);
-- each line's answer is kept as it comes, so a batch picked up again sends
-- only the lines that had none.
CREATE TABLE batch_files (
    id         TEXT    NOT NULL PRIMARY KEY,
    owner      TEXT    NOT NULL,
    created_ms BIGINT  NOT NULL,
    expires_ms BIGINT  NOT NULL,
    meta       TEXT    NOT NULL,
    content    BLOB   NOT NULL
);
CREATE INDEX batch_files_owner ON batch_files (owner, created_ms);
CREATE INDEX batch_files_expiry ON batch_files (expires_ms);
CREATE TABLE batches (
    id             TEXT    NOT NULL PRIMARY KEY,
    owner          TEXT    NOT NULL,
    final          INTEGER NOT NULL,
    lease_until_ms BIGINT  NOT NULL,
    forget_ms      BIGINT  NOT NULL,
    body           BLOB   NOT NULL
);
CREATE INDEX batches_owner ON batches (owner, id);
CREATE INDEX batches_due ON batches (final, lease_until_ms);
CREATE TABLE batch_results (
    batch_id TEXT    NOT NULL,
    line     BIGINT  NOT NULL,
    ok       INTEGER NOT NULL,
    body     BLOB   NOT NULL,
    PRIMARY KEY (batch_id, line)
);
