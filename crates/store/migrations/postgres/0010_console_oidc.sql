-- Switchyard store, version 10 (postgres). Keep in step with ../sqlite/0010_console_oidc.sql.
-- Console sign-ins through an OpenID Connect provider that are under way: what
-- the callback checks (state, nonce) and sends (the PKCE verifier, the same
-- redirect URI), kept here so that the callback may reach any instance. A row
-- is taken (deleted) by its callback, or purged once expired.
CREATE TABLE console_oidc_logins (
    id            TEXT PRIMARY KEY, -- SHA-256 (hex) of the browser's cookie value; the value is never stored
    state         TEXT NOT NULL,
    nonce         TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    redirect_uri  TEXT NOT NULL,
    next          TEXT NOT NULL,    -- the console path to return to
    created_ms    BIGINT NOT NULL,
    expires_ms    BIGINT NOT NULL
);
CREATE INDEX console_oidc_logins_expires ON console_oidc_logins (expires_ms);
