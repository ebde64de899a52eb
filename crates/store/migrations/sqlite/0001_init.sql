-- Switchyard store, version 1 (SQLite). Keep in step with ../postgres/0001_init.sql:
-- the same tables, columns and constraints. Times are unix milliseconds; ids are text.

CREATE TABLE projects (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL UNIQUE,
    log_content       BOOLEAN NOT NULL DEFAULT false,
    content_cap_bytes BIGINT NOT NULL DEFAULT 65536,
    created_at        BIGINT NOT NULL
);

CREATE TABLE users (
    id                 TEXT PRIMARY KEY,
    email              TEXT NOT NULL UNIQUE,
    name               TEXT,
    role               TEXT NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
    primary_project_id TEXT REFERENCES projects (id) ON DELETE SET NULL,
    disabled           BOOLEAN NOT NULL DEFAULT false,
    created_at         BIGINT NOT NULL
);

CREATE TABLE project_members (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members (user_id);

CREATE TABLE groups (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE group_members (
    group_id   TEXT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members (user_id);

-- Only the SHA-256 of a key's secret is stored; `prefix` is its visible start.
CREATE TABLE api_keys (
    id             TEXT PRIMARY KEY,
    prefix         TEXT NOT NULL,
    hash           TEXT NOT NULL UNIQUE,
    user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    project_id     TEXT REFERENCES projects (id) ON DELETE CASCADE,
    label          TEXT,
    allowed_models TEXT, -- JSON array of model patterns; NULL: no limit
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT,
    revoked_at     BIGINT,
    last_used_at   BIGINT
);
CREATE INDEX api_keys_user ON api_keys (user_id);

CREATE TABLE access_rules (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    effect       TEXT NOT NULL CHECK (effect IN ('allow', 'deny')),
    pattern      TEXT NOT NULL,
    subject_kind TEXT NOT NULL CHECK (subject_kind IN ('any', 'role', 'group', 'project', 'user')),
    subject      TEXT,
    reason       TEXT NOT NULL,
    priority     BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    CHECK ((subject_kind = 'any') = (subject IS NULL))
);

-- BYOK: sealed elsewhere; the row id is bound into the ciphertext.
CREATE TABLE provider_credentials (
    id          TEXT PRIMARY KEY,
    owner_kind  TEXT NOT NULL CHECK (owner_kind IN ('user', 'project')),
    owner_id    TEXT NOT NULL,
    provider    TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    nonce       TEXT NOT NULL,
    ciphertext  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (owner_kind, owner_id, provider)
);

-- One row per request (core's RequestRecord). No foreign keys: the audit trail
-- outlives users and projects, and replayed spill files must always insert.
CREATE TABLE request_records (
    id                 TEXT PRIMARY KEY,
    time_ms            BIGINT NOT NULL,
    user_id            TEXT,
    key_prefix         TEXT,
    project_id         TEXT,
    client_format      TEXT NOT NULL,
    requested_model    TEXT NOT NULL,
    resolved_model     TEXT,
    route_id           TEXT,
    provider           TEXT,
    served_provider    TEXT,
    upstream_model     TEXT,
    descriptor         TEXT NOT NULL,
    status             INTEGER NOT NULL,
    error_code         TEXT,
    attempts           TEXT NOT NULL, -- JSON array of AttemptRecord
    ttft_ms            BIGINT,
    total_ms           BIGINT NOT NULL,
    input_tokens       BIGINT,
    output_tokens      BIGINT,
    cache_read_tokens  BIGINT,
    cache_write_tokens BIGINT,
    reasoning_tokens   BIGINT,
    cost_usd           DOUBLE PRECISION,
    estimated          BOOLEAN NOT NULL,
    stream             BOOLEAN NOT NULL,
    content            TEXT
);
CREATE INDEX request_records_time ON request_records (time_ms);
CREATE INDEX request_records_user_time ON request_records (user_id, time_ms);
CREATE INDEX request_records_project_time ON request_records (project_id, time_ms);
CREATE INDEX request_records_model_time ON request_records (resolved_model, time_ms);
