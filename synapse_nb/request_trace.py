"""What tracing learns about one MCP request (McpRequestTrace) and the RequestTracer protocol that turns it into
a client span and a duration metric: the mcp_client layer fills the record, the telemetry layer reads it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

__all__ = ["McpRequestTrace", "RequestTracer"]


@dataclass(slots=True)
class McpRequestTrace:
    """One request the client sends a server, as the OpenTelemetry MCP conventions describe it.

    `method`, `target` and `request_id` come from the JSON-RPC request as it goes on the wire (the first one
    sent for this request); `method_hint` / `target_hint` stand in where nothing could be seen (an in-process
    server). `error_type` is set when the request failed (an exception's type, `tool_error` for a tool
    result marked `isError`), `status_code` to the JSON-RPC error code when the server answered with one.
    `session_id` only where the protocol has sessions that carry an id (2025-era streamable HTTP).
    """

    server: str
    transport: str
    method_hint: str
    target_hint: str | None = None
    protocol_version: str | None = None
    session_id: str | None = None
    server_address: str | None = None
    server_port: int | None = None
    method: str | None = None
    target: str | None = None
    request_id: str | None = None
    error_type: str | None = None
    status_code: str | None = None

    @property
    def method_name(self) -> str:
        return self.method or self.method_hint

    @property
    def target_name(self) -> str | None:
        return self.target if self.method is not None else self.target_hint


class RequestTracer(Protocol):
    """Makes the client span of each MCP request: `request(trace)` is entered in the task that sends it (its
    span is the current span there, so the SDK carries its trace context to the server in `_meta`), and
    reads `trace` again when it exits."""

    def request(self, trace: McpRequestTrace) -> AbstractContextManager[None]: ...
