"""The recorded relations as Python knows them: columns, their kinds, and each relation's time column.

This mirrors the SQL in ../../migrations (which is the truth for DuckDB); the spool, ingest and reader
code use it to turn JSON lines into typed columns. A test checks the two agree.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["COLUMNS", "RELATIONS", "SQL_TYPE", "TIME_COLUMN", "Kind"]

Kind = Literal["str", "int", "float", "bool", "ts", "json"]
"""How a column is coerced on ingest: `ts` is naive UTC TIMESTAMP, `json` a DuckDB JSON value."""

SQL_TYPE: dict[Kind, str] = {
    "str": "VARCHAR",
    "int": "BIGINT",
    "float": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMP",
    "json": "JSON",
}
"""The DuckDB type of each kind (what the migrations create)."""

COLUMNS: dict[str, dict[str, Kind]] = {
    "sessions": {
        "session_id": "str",
        "name": "str",
        "created_at": "ts",
        "model": "str",
        "notebook": "str",
        "kernel_id": "str",
    },
    "messages": {
        "message_id": "str",
        "session_id": "str",
        "seq": "int",
        "role": "str",
        "content": "str",
        "tool_call_id": "str",
        "model": "str",
        "created_at": "ts",
        "tool_calls": "json",
        "tool_results": "json",
    },
    "tool_calls": {
        "tool_call_id": "str",
        "session_id": "str",
        "message_id": "str",
        "server": "str",
        "tool": "str",
        "arguments": "json",
        "result_text": "str",
        "result": "json",
        "is_error": "bool",
        "error": "str",
        "approval": "str",
        "started_at": "ts",
        "duration_ms": "float",
        "outcome": "str",
        "origin": "str",
    },
    "llm_calls": {
        "llm_call_id": "str",
        "session_id": "str",
        "provider": "str",
        "model": "str",
        "started_at": "ts",
        "duration_ms": "float",
        "ttft_ms": "float",
        "input_tokens": "int",
        "output_tokens": "int",
        "stop_reason": "str",
        "error": "str",
        "origin": "str",
        "tool_call_id": "str",
        "cached_input_tokens": "int",
        "cache_write_tokens": "int",
        "cost_usd": "float",
        "price_source": "str",
        "input_cost_usd": "float",
        "tool_result_tokens": "json",
        "request": "json",
        "replayed": "bool",
    },
    "turns": {
        "turn_id": "str",
        "session_id": "str",
        "prompt": "str",
        "status": "str",
        "started_at": "ts",
        "duration_ms": "float",
        "iterations": "int",
        "input_tokens": "int",
        "output_tokens": "int",
        "error": "str",
        "model": "str",
        "error_type": "str",
        "cost_usd": "float",
        "cached_input_tokens": "int",
        "replayed": "bool",
    },
    "server_events": {
        "server": "str",
        "event": "str",
        "detail": "json",
        "at": "ts",
    },
    "task_events": {
        "task_id": "str",
        "event": "str",
        "server": "str",
        "tool": "str",
        "form": "str",
        "status": "str",
        "status_message": "str",
        "arguments": "json",
        "session_id": "str",
        "cell": "str",
        "tool_call_id": "str",
        "created_at": "ts",
        "updated_at": "ts",
        "poll_interval_ms": "int",
        "at": "ts",
    },
}

RELATIONS: tuple[str, ...] = tuple(COLUMNS)
"""The user-facing relations, in the order they are exported."""

TIME_COLUMN: dict[str, str] = {
    "sessions": "created_at",
    "messages": "created_at",
    "tool_calls": "started_at",
    "llm_calls": "started_at",
    "turns": "started_at",
    "server_events": "at",
    "task_events": "at",
}
"""The column `since` / `until` filter on, and that orders rows."""

