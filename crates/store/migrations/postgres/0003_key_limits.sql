-- Switchyard store, version 3 (PostgreSQL). Keep in step with ../sqlite/0003_key_limits.sql.
-- A gateway key's own rate limits (requests and tokens per minute, requests at
-- once), as the JSON of core's `Limits` ({"rpm": 60, "concurrent": 2}); NULL: the
-- key has none of its own (its user's and project's limits still apply).
ALTER TABLE api_keys ADD COLUMN limits TEXT;
