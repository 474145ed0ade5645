-- MCP tasks (issue 33): tool calls a server runs in the background, which may outlive the cell and the kernel
-- that started them. One row per thing that happened to a task: its creation (event 'created', with the call's
-- arguments, masked like tool_calls.arguments, and the session, cell and tool call that started it), then each
-- change of status or status message (event 'status'). `created_at` and `updated_at` are the server's own
-- timestamps, so a task's duration is the task's; `at` is when this client saw it.
CREATE TABLE task_events (
    task_id          VARCHAR,
    event            VARCHAR,   -- created | status
    server           VARCHAR,   -- the server's config name
    tool             VARCHAR,   -- the tool's name on the server
    form             VARCHAR,   -- 2025-11-25 (experimental tasks) | 2026-07-28 (the io.modelcontextprotocol/tasks extension)
    status           VARCHAR,   -- working | input_required | completed | failed | cancelled
    status_message   VARCHAR,
    arguments        JSON,
    session_id       VARCHAR,
    cell             VARCHAR,
    tool_call_id     VARCHAR,   -- the tool_calls row the task's result lands in
    created_at       TIMESTAMP,
    updated_at       TIMESTAMP,
    poll_interval_ms BIGINT,
    "at"             TIMESTAMP,
    _seq             BIGINT DEFAULT nextval('_lake_seq')
);

-- Each task as it stands: its first facts and its latest status (synapse_nb.history's readers define the same
-- view over the rows not yet ingested as well: history/schema.py, TASKS_VIEW).
CREATE VIEW tasks AS
SELECT
    task_id,
    coalesce(arg_min(server, "at") FILTER (WHERE event = 'created'), arg_min(server, "at")) AS server,
    coalesce(arg_min(tool, "at") FILTER (WHERE event = 'created'), arg_max(tool, "at")) AS tool,
    arg_min(form, "at") AS form,
    arg_max(status, "at") AS status,
    arg_max(status_message, "at") AS status_message,
    arg_min(arguments, "at") FILTER (WHERE event = 'created') AS arguments,
    arg_min(session_id, "at") FILTER (WHERE event = 'created') AS session_id,
    arg_min(cell, "at") FILTER (WHERE event = 'created') AS cell,
    max(tool_call_id) AS tool_call_id,
    min(created_at) AS created_at,
    max(updated_at) AS updated_at,
    max(updated_at) FILTER (WHERE status IN ('completed', 'failed', 'cancelled')) AS finished_at,
    date_diff('millisecond', min(created_at),
              max(updated_at) FILTER (WHERE status IN ('completed', 'failed', 'cancelled')))::DOUBLE AS duration_ms,
    min("at") AS first_seen_at,
    max("at") AS last_seen_at
FROM task_events
GROUP BY task_id;
