-- Every index on the request table is written with every record, and those
-- on project and on model took a third of a record's insert where traffic is
-- spread over many of them (the audit writer's throughput test). What they
-- answered is answered elsewhere now: usage and budgets by project or model
-- from the rollups (`request_rollups`, `request_rollup_slices`), and a
-- request list filtered by either walks the time index, as one filtered by
-- provider, key or status always has. The user index stays: a user's own
-- requests are what support looks up.
DROP INDEX IF EXISTS request_records_project_time;
DROP INDEX IF EXISTS request_records_model_time;
