"""Span names and attributes of agent events, after the OpenTelemetry GenAI semantic conventions (pure; no I/O).

A turn is an `invoke_agent` span, each model request a `chat` span, each tool call an `execute_tool`
span. Standard keys (`gen_ai.*`, `error.type`) where the conventions have one; ours under `synapse.*`
(session, server, approval, cost). Content (prompt, answer, arguments, results) only when a `Content`
says so, always masked and bounded; error texts are masked whether content is on or not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..events import (
    LlmCallFinished,
    ToolCallFinished,
    ToolCallStarted,
    TurnCancelled,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ..types import Usage

__all__ = [
    "AGENT_NAME",
    "CONTENT_LIMIT",
    "Attributes",
    "Content",
    "Failure",
    "llm_attributes",
    "llm_failure",
    "llm_span_name",
    "split_model",
    "tool_end_attributes",
    "tool_failure",
    "tool_span_name",
    "tool_start_attributes",
    "turn_end_attributes",
    "turn_failure",
    "turn_span_name",
    "turn_start_attributes",
]

Attributes = dict[str, str | bool | int | float | tuple[str, ...]]
"""What a span gets: OpenTelemetry attribute values are primitives or arrays of strings; structured
content (messages) goes in as a JSON string, as the conventions allow where nesting is not supported."""

AGENT_NAME = "synapse_nb"
"""`gen_ai.agent.name` of every turn."""
CONTENT_LIMIT = 8192
"""Characters of one content attribute (prompt, answer, arguments, result) before it is cut."""
_ERROR_LIMIT = 500
_TYPE_NAME = re.compile(r"^[A-Za-z_][\w.]{0,80}$")
_EXCEPTION_NAME = re.compile(r"^[A-Z]\w{0,80}(?:Error|Exception|Timeout|Warning)$")


@dataclass(frozen=True, slots=True)
class Content:
    """Whether content goes into spans (`SYNAPSE_OTEL_CONTENT=1`) and the mask every text passes through."""

    enabled: bool
    mask: Callable[[str], str]

    def text(self, value: str) -> str:
        """`value` masked, then cut at CONTENT_LIMIT characters (masked first: a cut must not split a secret)."""
        masked = self.mask(value)
        if len(masked) <= CONTENT_LIMIT:
            return masked
        return f"{masked[:CONTENT_LIMIT]}... [cut: {len(masked):,} characters]"


@dataclass(frozen=True, slots=True)
class Failure:
    """How a span ended in error: `error.type` (low cardinality) and the status description (masked)."""

    error_type: str
    description: str


def split_model(model_id: str) -> tuple[str, str]:
    """`provider:model` -> (provider, model); an id without a provider gives ("", id)."""
    provider, sep, model = model_id.partition(":")
    return (provider, model) if sep else ("", model_id)


# -- turns


def turn_span_name() -> str:
    return f"invoke_agent {AGENT_NAME}"


def turn_start_attributes(e: TurnStarted, content: Content, session_name: str | None = None) -> Attributes:
    provider, model = split_model(e.model)
    attrs: Attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.conversation.id": e.session_id,
        "gen_ai.provider.name": provider or "unknown",
        "gen_ai.request.model": model,
        "synapse.session_id": e.session_id,
        "synapse.turn_id": e.turn_id,
    }
    if session_name:
        attrs["synapse.session_name"] = session_name
    if content.enabled:
        attrs["gen_ai.input.messages"] = _messages("user", content.text(e.prompt))
    return attrs


def turn_end_attributes(e: TurnFinished | TurnFailed | TurnCancelled, content: Content) -> Attributes:
    status = "finished" if isinstance(e, TurnFinished) else "failed" if isinstance(e, TurnFailed) else "cancelled"
    attrs: Attributes = {"synapse.status": status, "synapse.iterations": e.iterations, **_usage(e.usage)}
    _cost(attrs, e)
    if content.enabled and isinstance(e, TurnFinished):
        attrs["gen_ai.output.messages"] = _messages("assistant", content.text(e.text), finish_reason="stop")
    return attrs


def turn_failure(e: TurnFinished | TurnFailed | TurnCancelled, content: Content) -> Failure | None:
    if isinstance(e, TurnFailed):
        return Failure(_type_or_other(e.error_type), _description(e.error, content))
    return None


# -- model requests


def llm_span_name(e: LlmCallFinished) -> str:
    return f"chat {e.model}"


def llm_attributes(e: LlmCallFinished) -> Attributes:
    attrs: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": e.provider,
        "gen_ai.request.model": e.model,
        "synapse.llm_call_id": e.llm_call_id,
        **_usage(e.usage),
    }
    if e.session_id:
        attrs["synapse.session_id"] = e.session_id
    if e.stop_reason:
        attrs["gen_ai.response.finish_reasons"] = (e.stop_reason,)
    if e.ttft_ms is not None:
        attrs["synapse.ttft_ms"] = round(e.ttft_ms, 3)
    if e.origin:
        attrs["synapse.origin"] = e.origin
    if e.tool_call_id:
        attrs["synapse.tool_call_id"] = e.tool_call_id
    for field, key in (("cached_input_tokens", "gen_ai.usage.cache_read.input_tokens"),
                       ("cache_write_tokens", "gen_ai.usage.cache_creation.input_tokens")):
        value = _number(e, field) if _number(e, field) is not None else _number(e.usage, field)
        if value is not None:
            attrs[key] = int(value)
    _cost(attrs, e)
    return attrs


def llm_failure(e: LlmCallFinished, content: Content) -> Failure | None:
    if e.error is None or e.error == "cancelled":
        return None
    return Failure(_error_type(e.error), _description(e.error, content))


# -- tool calls


def tool_span_name(tool: str) -> str:
    return f"execute_tool {tool}"


def tool_start_attributes(e: ToolCallStarted | ToolCallFinished, content: Content) -> Attributes:
    attrs: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": e.tool,
        "gen_ai.tool.call.id": e.call.id,
        # an MCP server's tool runs outside the agent ("extension"); a notebook function in it ("function")
        "gen_ai.tool.type": "extension" if e.server else "function",
        "synapse.tool": e.call.name,
        "synapse.approval": e.approval,
        "synapse.origin": e.origin,  # agent | manual | app:SERVER
    }
    if e.session_id:
        attrs["synapse.session_id"] = e.session_id
    if e.server:
        attrs["synapse.server"] = e.server
    if content.enabled:
        attrs["gen_ai.tool.call.arguments"] = content.text(_json(e.call.arguments))
    return attrs


def tool_end_attributes(e: ToolCallFinished, content: Content) -> Attributes:
    attrs: Attributes = {"synapse.is_error": e.is_error, "synapse.approval": e.approval, "synapse.origin": e.origin}
    if e.error == "cancelled":
        attrs["synapse.cancelled"] = True
    if content.enabled and e.result is not None:
        attrs["gen_ai.tool.call.result"] = content.text(e.result.text)
    return attrs


def tool_failure(e: ToolCallFinished, content: Content) -> Failure | None:
    if e.error is not None:
        if e.error == "cancelled":
            return None
        return Failure(_error_type(e.error), _description(e.error, content))
    if e.result is not None and e.result.is_error:
        text = e.result.text
        # a notebook tool that raised answers `Type: message`; an MCP server's error result is free text
        head = text.partition(":")[0].strip()
        kind = "denied" if e.approval == "denied" else head if _EXCEPTION_NAME.match(head) else "tool_error"
        return Failure(kind, _description(text or kind, content))
    return None


# -- helpers


def _usage(usage: Usage) -> Attributes:
    return {"gen_ai.usage.input_tokens": usage.input_tokens, "gen_ai.usage.output_tokens": usage.output_tokens}


def _cost(attrs: Attributes, event: object) -> None:
    """Cost where the event knows it (the pricing work adds `cost_usd` / `price_source`); nothing otherwise."""
    cost = _number(event, "cost_usd")
    if cost is not None:
        attrs["synapse.cost_usd"] = float(cost)
    source = getattr(event, "price_source", None)
    if isinstance(source, str) and source:
        attrs["synapse.price_source"] = source


def _number(obj: object, name: str) -> float | int | None:
    value = getattr(obj, name, None)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _messages(role: str, text: str, *, finish_reason: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return json.dumps([message], ensure_ascii=False)


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _error_type(error: str) -> str:
    """`error.type` from our one-line errors (`Type: message`): the type, else `_OTHER`."""
    head = error.partition(":")[0].strip()
    return _type_or_other(head)


def _type_or_other(name: str) -> str:
    return name if _TYPE_NAME.match(name) else "_OTHER"


def _description(error: str, content: Content) -> str:
    text = " ".join(content.mask(error).split())
    return text if len(text) <= _ERROR_LIMIT else f"{text[:_ERROR_LIMIT]}..."
