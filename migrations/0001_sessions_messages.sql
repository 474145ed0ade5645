-- The first schema: conversation sessions and their messages (tool columns arrive in 0002).
CREATE TABLE sessions (
    session_id  VARCHAR,
    name        VARCHAR,
    created_at  TIMESTAMP,
    model       VARCHAR,
    notebook    VARCHAR,
    kernel_id   VARCHAR
);

CREATE TABLE messages (
    message_id   VARCHAR,
    session_id   VARCHAR,
    seq          BIGINT,
    role         VARCHAR,
    content      VARCHAR,
    tool_call_id VARCHAR,
    model        VARCHAR,
    created_at   TIMESTAMP
);
