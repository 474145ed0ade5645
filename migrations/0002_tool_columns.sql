-- Messages carry tool calls and tool results; tool calls, LLM calls and server events get their own tables.
ALTER TABLE messages ADD COLUMN tool_calls JSON;
ALTER TABLE messages ADD COLUMN tool_results JSON;

CREATE TABLE tool_calls (
    tool_call_id VARCHAR,
    session_id   VARCHAR,
    message_id   VARCHAR,
    server       VARCHAR,
    tool         VARCHAR,
    arguments    JSON,
    result_text  VARCHAR,
    result       JSON,
    is_error     BOOLEAN,
    error        VARCHAR,
    approval     VARCHAR,
    started_at   TIMESTAMP,
    duration_ms  DOUBLE
);

CREATE TABLE llm_calls (
    llm_call_id   VARCHAR,
    session_id    VARCHAR,
    provider      VARCHAR,
    model         VARCHAR,
    started_at    TIMESTAMP,
    duration_ms   DOUBLE,
    ttft_ms       DOUBLE,
    input_tokens  BIGINT,
    output_tokens BIGINT,
    stop_reason   VARCHAR,
    error         VARCHAR
);

CREATE TABLE server_events (
    server VARCHAR,
    event  VARCHAR,
    detail JSON,
    "at"   TIMESTAMP
);
