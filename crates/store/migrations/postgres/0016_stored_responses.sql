-- Switchyard store, version 16 (PostgreSQL). Keep in step with ../sqlite/0016_stored_responses.sql.
-- Stored Responses (the Responses API's `store` and `previous_response_id`),
-- per owner (the gateway key that made them): the whole input each answered
-- and the response object, as deflated JSON. Gone after `expires_ms`.
CREATE TABLE stored_responses (
    owner      TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    created_ms BIGINT  NOT NULL,
    expires_ms BIGINT  NOT NULL,
    body       BYTEA   NOT NULL,
    PRIMARY KEY (owner, id)
);
CREATE INDEX stored_responses_expiry ON stored_responses (expires_ms);
