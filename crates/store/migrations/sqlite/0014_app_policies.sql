-- Switchyard store, version 14 (SQLite). Keep in step with ../postgres/0014_app_policies.sql.
-- A key's and a project's own routing policy (per-application policy: a pinned
-- strategy, an adaptive policy, a cost ceiling), as the JSON of core's
-- AppPolicy; NULL: none of its own (the routes' apply).
ALTER TABLE api_keys ADD COLUMN routing TEXT;
ALTER TABLE projects ADD COLUMN routing TEXT;
