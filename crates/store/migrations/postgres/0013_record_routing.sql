-- Switchyard store, version 13 (PostgreSQL). Keep in step with ../sqlite/0013_record_routing.sql.
-- What the request's routing decided beyond the route's own order: an auto
-- model's class and rule, the structured-output mode (JSON, the core's
-- RoutingRecord); NULL when nothing was. The class is also its own column, so
-- traffic by intent is a plain filter.
ALTER TABLE request_records ADD COLUMN routing TEXT;
ALTER TABLE request_records ADD COLUMN intent TEXT;
