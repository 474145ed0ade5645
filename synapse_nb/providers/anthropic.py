"""The Anthropic Messages API adapter: streamed text and tool_use blocks over SSE."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..protocols import Completion, ProviderChunk, TextChunk, ToolCallChunk
from ..types import ContentBlock, Message, ToolCall, ToolSpec, Usage
from ._http import HttpStreamer, RetryPolicy, SseProvider

__all__ = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "MAX_BREAKPOINTS",
    "AnthropicProvider",
    "mark_cache_breakpoints",
    "to_anthropic_messages",
    "to_anthropic_tools",
]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096


def _image(block: ContentBlock) -> dict[str, Any]:
    source = {"type": "base64", "media_type": block.mime_type or "image/png", "data": block.data}
    return {"type": "image", "source": source}


def _text_and_images(text: str, images: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    # The API rejects empty text blocks, so an empty text is left out rather than sent.
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    return blocks + [_image(i) for i in images if i.data]


def to_anthropic_messages(
    messages: Sequence[Message], system: str | None = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """(system, messages) in Messages API form.

    System messages join the top-level `system`. Tool results become `tool_result` blocks of a user turn,
    with `is_error` and the images as base64 image blocks; consecutive turns of one role merge into one
    (so a run of tool results, and a user message after them, form a single user turn).
    """
    system_parts = [system] if system else []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for m in messages:
        if m.role == "system":
            if m.content:
                system_parts.append(m.content)
        elif m.role == "user":
            add("user", _text_and_images(m.content, m.images))
        elif m.role == "assistant":
            blocks = _text_and_images(m.content, ())
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)} for c in m.tool_calls
            ]
            add("assistant", blocks)
        else:
            content = _text_and_images(m.content, m.images) or [{"type": "text", "text": "(no output)"}]
            result = {
                "type": "tool_result", "tool_use_id": m.tool_call_id or "", "is_error": m.is_error, "content": content,
            }
            add("user", [result])
    return ("\n\n".join(system_parts) or None), turns


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)} for t in tools]


_EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4  # the API rejects a request with more cache_control blocks


def mark_cache_breakpoints(body: dict[str, Any]) -> None:
    """Put `cache_control` breakpoints on the stable prefix of a request body (in place), at most 4.

    The cache covers everything up to a breakpoint, in the order tools, system, messages: the last
    tool (all tools), the system prompt, the end of the previous request's prompt (the last user turn
    before the latest assistant reply: what the iteration or cell before wrote to the cache), and the
    last block of the request (written now, read by the next iteration or the follow-up cell). The API
    looks up earlier cache entries from each breakpoint back, so those two message breakpoints keep a
    hit even when many tool results came in between. Prefixes shorter than the model's minimum are
    simply not cached (no error).
    """
    marks = 0
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": _EPHEMERAL}
        marks += 1
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
        marks += 1
    turns: list[dict[str, Any]] = body.get("messages") or []
    targets: list[int] = []
    if turns:
        targets.append(len(turns) - 1)
        last_reply = next((i for i in range(len(turns) - 1, -1, -1) if turns[i]["role"] == "assistant"), None)
        if last_reply is not None:
            earlier = next((i for i in range(last_reply - 1, -1, -1) if turns[i]["role"] == "user"), None)
            if earlier is not None:
                targets.append(earlier)
    for index in targets[: MAX_BREAKPOINTS - marks]:
        content = turns[index]["content"]
        if content:
            content[-1] = {**content[-1], "cache_control": _EPHEMERAL}


@dataclass(slots=True)
class _Block:
    kind: str
    tool_index: int = -1
    id: str = ""
    name: str = ""
    start_input: Mapping[str, Any] | None = None
    json_parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Accumulator:
    """The state of one streamed message: turns Messages API events into chunks."""

    streamer: HttpStreamer
    blocks: dict[int, _Block] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    stop_reason: str | None = None
    stopped: bool = False

    def feed(self, obj: Mapping[str, Any]) -> list[TextChunk | ToolCallChunk]:
        kind = obj.get("type")
        if kind == "message_start":
            self._usage((obj.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            return self._start(int(obj.get("index", 0)), obj.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(int(obj.get("index", 0)), obj.get("delta") or {})
        elif kind == "message_delta":
            self.stop_reason = (obj.get("delta") or {}).get("stop_reason") or self.stop_reason
            self._usage(obj.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            err = obj.get("error") or {}
            self.streamer.raise_api_error(
                status=None, error_type=str(err.get("type") or "") or None, message=str(err.get("message") or err)
            )
        # ping, content_block_stop and event types added later carry nothing we need.
        return []

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        # Cached prompt tokens are reported apart from input_tokens; all of them were read as input.
        read = int(usage.get("cache_read_input_tokens") or 0)
        write = int(usage.get("cache_creation_input_tokens") or 0)
        inputs = int(usage.get("input_tokens") or 0) + read + write
        self.input_tokens = max(self.input_tokens, inputs)
        self.cache_read = max(self.cache_read, read)
        self.cache_write = max(self.cache_write, write)
        self.output_tokens = max(self.output_tokens, int(usage.get("output_tokens") or 0))

    def _start(self, index: int, block: Mapping[str, Any]) -> list[TextChunk | ToolCallChunk]:
        kind = str(block.get("type"))
        if kind == "tool_use":
            tool_index = sum(1 for b in self.blocks.values() if b.kind == "tool_use")
            b = _Block(kind, tool_index, str(block.get("id") or f"toolu_{tool_index}"), str(block.get("name") or ""))
            b.start_input = block.get("input") or None
            self.blocks[index] = b
            return [ToolCallChunk(tool_index, id=b.id, name=b.name)]
        self.blocks[index] = _Block(kind)
        text = block.get("text") if kind == "text" else None
        if isinstance(text, str) and text:
            self.text.append(text)
            return [TextChunk(text)]
        return []

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[TextChunk | ToolCallChunk]:
        block = self.blocks.get(index)
        if block is None:
            raise self.streamer.stream_error(f"the stream sent a delta for content block {index} before its start")
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text":
            piece = str(delta.get("text") or "")
            if piece:
                self.text.append(piece)
                return [TextChunk(piece)]
        elif kind == "input_json_delta" and block.kind == "tool_use":
            piece = str(delta.get("partial_json") or "")
            if piece:
                block.json_parts.append(piece)
                return [ToolCallChunk(block.tool_index, arguments_delta=piece)]
        return []  # thinking and signature deltas are not part of the answer

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls = []
        for _, b in sorted(self.blocks.items()):
            if b.kind != "tool_use":
                continue
            raw = "".join(b.json_parts)
            args = self.streamer.parse_arguments(raw, b.name) if raw or not b.start_input else dict(b.start_input)
            calls.append(ToolCall(b.id, b.name, args))
        return tuple(calls)


class AnthropicProvider(SseProvider):
    """Streams the Messages API over SSE (`POST {base}/v1/messages`, `x-api-key`, `anthropic-version`).

    `prompt_cache` (default on) marks the stable prefix with cache_control breakpoints (see
    mark_cache_breakpoints); the usage then reports cache reads and writes apart.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = ANTHROPIC_BASE_URL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        key_variable: str | None = "ANTHROPIC_API_KEY",
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        extra_body: Mapping[str, Any] | None = None,
        prompt_cache: bool = True,
    ) -> None:
        self.name = "anthropic"
        self.prompt_cache = prompt_cache
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self._headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            self._headers["x-api-key"] = api_key
        self._http = HttpStreamer(
            provider=self.name, base_url=self.base_url, secrets=(api_key,) if api_key else (),
            key_variable=key_variable, timeout=timeout, retry=retry, transport=transport,
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r})"

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> dict[str, Any]:
        system_text, turns = to_anthropic_messages(messages, system)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": turns, "stream": True}
        if system_text:
            body["system"] = system_text
        if tools:
            body["tools"] = to_anthropic_tools(tools)
        if self.prompt_cache:
            mark_cache_breakpoints(body)
        return {**body, **self.extra_body}


    async def _attempt(self, body: Mapping[str, Any], started: float) -> AsyncGenerator[ProviderChunk, None]:
        acc = _Accumulator(self._http)
        ttft: float | None = None
        # Checked after each event is handled: message_stop ends the stream (its tail is drained).
        events = self._http.post_sse("/v1/messages", body, self._headers, last=lambda _event: acc.stopped)
        async with contextlib.aclosing(events):
            async for event in events:
                obj = self._http.parse_json(event.data)
                if not isinstance(obj, dict):  # parsed JSON
                    raise self._http.stream_error(f"the stream sent a JSON value that is not an object: {event.data!r}")
                for chunk in acc.feed(obj):
                    if ttft is None:
                        ttft = (time.perf_counter() - started) * 1000
                    yield chunk
        if not acc.stopped:
            raise self._http.stream_error("the stream ended before the response was complete (no message_stop)")
        message = Message.assistant("".join(acc.text), acc.tool_calls())
        usage = Usage(
            acc.input_tokens, acc.output_tokens, cached_input_tokens=acc.cache_read, cache_write_tokens=acc.cache_write
        )
        yield Completion(message, usage, acc.stop_reason, ttft)
