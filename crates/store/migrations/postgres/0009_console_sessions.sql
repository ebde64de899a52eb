-- Switchyard store, version 9 (postgres). Keep in step with ../sqlite/0009_console_sessions.sql.
-- Console sign-in sessions, shared by every instance on this database so that a
-- browser signed in through one is signed in through all, and a revocation is
-- seen by all at its next page.
CREATE TABLE console_sessions (
    id           TEXT PRIMARY KEY, -- SHA-256 (hex) of the cookie's token; the token is never stored
    csrf         TEXT NOT NULL,    -- the token every form of this session carries back
    method       TEXT NOT NULL,    -- key | oidc
    key_hash     TEXT,             -- method key: the key signed in with (SHA-256), resolved again at each use
    subject      TEXT NOT NULL,    -- who: a user id, bootstrap-admin, or the identity provider's subject
    name         TEXT,             -- what pages show (an email, a name)
    role         TEXT NOT NULL,    -- admin | viewer, as decided at sign-in
    address      TEXT,
    user_agent   TEXT,
    created_ms   BIGINT NOT NULL,
    expires_ms   BIGINT NOT NULL,
    last_seen_ms BIGINT NOT NULL,
    revoked_ms   BIGINT
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_ms);
