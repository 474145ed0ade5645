"""The OpenAI Chat Completions adapter (also DeepSeek, Ollama, vLLM, LM Studio: any compatible base URL)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..protocols import Completion, ProviderChunk, TextChunk, ToolCallChunk
from ..types import ContentBlock, Message, ToolCall, ToolSpec, Usage
from ._http import HttpStreamer, RetryPolicy, ServerSentEvent, SseProvider

__all__ = ["OPENAI_BASE_URL", "OpenAIProvider", "to_openai_messages", "to_openai_tools"]

OPENAI_BASE_URL = "https://api.openai.com/v1"


def _data_url(image: ContentBlock) -> str:
    return f"data:{image.mime_type or 'image/png'};base64,{image.data}"


def _user_content(text: str, images: Sequence[ContentBlock]) -> str | list[dict[str, Any]]:
    if not images:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [{"type": "image_url", "image_url": {"url": _data_url(i)}} for i in images if i.data]
    return parts


def to_openai_messages(messages: Sequence[Message], system: str | None = None) -> list[dict[str, Any]]:
    """Messages in Chat Completions form.

    Tool results become `role: tool` messages (an error is marked by an "Error: " prefix, since the API
    has no flag for it). Chat Completions takes no images in tool messages, so images returned by a run of
    tool results follow it in one user message of `image_url` data URLs.
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    pending: list[tuple[str, tuple[ContentBlock, ...]]] = []

    def flush_images() -> None:
        if not pending:
            return
        parts: list[dict[str, Any]] = []
        for call_id, images in pending:
            parts.append({"type": "text", "text": f"Image(s) returned by tool call {call_id}:"})
            parts += [{"type": "image_url", "image_url": {"url": _data_url(i)}} for i in images]
        out.append({"role": "user", "content": parts})
        pending.clear()

    for m in messages:
        if m.role != "tool":
            flush_images()
        if m.role == "system":
            out.append({"role": "system", "content": m.content})
        elif m.role == "user":
            out.append({"role": "user", "content": _user_content(m.content, m.images)})
        elif m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                d["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
                    }
                    for c in m.tool_calls
                ]
            elif not m.content:
                d["content"] = ""
            out.append(d)
        else:
            content = f"Error: {m.content}" if m.is_error else m.content
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": content})
            images = tuple(i for i in m.images if i.data)
            if images:
                pending.append((m.tool_call_id or "?", images))
    flush_images()
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool schemas in Chat Completions form (built the same way every time, so equal tools give equal bytes)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.input_schema)},
        }
        for t in tools
    ]


@dataclass(slots=True)
class _PendingCall:
    id: str
    name: str | None
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Accumulator:
    """The state of one streamed response: turns `chat.completion.chunk` objects into chunks."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None

    def feed(self, obj: Mapping[str, Any]) -> list[TextChunk | ToolCallChunk]:
        out: list[TextChunk | ToolCallChunk] = []
        usage = obj.get("usage")
        if isinstance(usage, dict):  # parsed JSON: dicts (an ABC check per token costs ~1 µs)
            self.usage = _usage(usage)
        choices = obj.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            return out
        choice = choices[0]
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta") or {}
        for key in ("content", "refusal"):
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                self.text.append(piece)
                out.append(TextChunk(piece))
        for entry in delta.get("tool_calls") or ():
            out += self._tool_piece(entry)
        return out

    def _tool_piece(self, entry: Mapping[str, Any]) -> list[TextChunk | ToolCallChunk]:
        fn = entry.get("function") or {}
        name = fn.get("name") or None
        args = fn.get("arguments") or ""
        if not isinstance(args, str):  # some compatible servers send the arguments already parsed
            args = json.dumps(args)
        index = entry.get("index")
        if not isinstance(index, int):
            # Servers that omit `index` (Ollama) send each call whole: a new id starts a new call.
            call_id = entry.get("id")
            last = max(self.calls) if self.calls else None
            continues = last is not None and (call_id is None or call_id == self.calls[last].id)
            index = last if continues and last is not None else len(self.calls)
        pending = self.calls.get(index)
        if pending is None:
            pending = self.calls[index] = _PendingCall(str(entry.get("id") or f"call_{index}"), name)
            pending.arguments.append(args)
            return [ToolCallChunk(index, id=pending.id, name=name, arguments_delta=args)]
        new_name = name if name and pending.name is None else None
        if new_name:
            pending.name = new_name
        if args:
            pending.arguments.append(args)
        return [ToolCallChunk(index, name=new_name, arguments_delta=args)] if args or new_name else []


def _usage(usage: Mapping[str, Any]) -> Usage:
    """Usage from a Chat Completions `usage` object; `prompt_tokens` includes the cached ones."""
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(
        int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
        cached_input_tokens=int(cached or 0),
    )


def _is_done(event: ServerSentEvent) -> bool:
    return event.data.strip() == "[DONE]"


class OpenAIProvider(SseProvider):
    """Streams Chat Completions over SSE; `name` is the provider id it serves (openai, deepseek, ollama...)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = OPENAI_BASE_URL,
        name: str = "openai",
        key_variable: str | None = "OPENAI_API_KEY",
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.extra_body = dict(extra_body or {})
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = HttpStreamer(
            provider=name, base_url=self.base_url, secrets=(api_key,) if api_key else (), key_variable=key_variable,
            timeout=timeout, retry=retry, transport=transport,
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> dict[str, Any]:
        """The request, laid out for OpenAI's automatic prompt caching (a cached prefix must match exactly):
        tools before messages and messages last, each serialised the same way every time, so the body
        of one iteration is a byte prefix of the next one's (up to the closing `]}`)."""
        body: dict[str, Any] = {"model": self.model, "stream": True, "stream_options": {"include_usage": True}}
        if tools:
            body["tools"] = to_openai_tools(tools)
        body.update(self.extra_body)
        body.pop("messages", None)
        body["messages"] = to_openai_messages(messages, system)
        return body


    async def _attempt(self, body: Mapping[str, Any], started: float) -> AsyncGenerator[ProviderChunk, None]:
        acc = _Accumulator()
        ttft: float | None = None
        done = False
        events = self._http.post_sse("/chat/completions", body, self._headers, last=_is_done)
        async with contextlib.aclosing(events):
            async for event in events:
                if _is_done(event):
                    done = True
                    continue
                obj = self._http.parse_json(event.data)
                if not isinstance(obj, dict):
                    raise self._http.stream_error(f"the stream sent a JSON value that is not an object: {event.data!r}")
                if obj.get("error"):
                    self._raise_stream_error(obj["error"])
                for chunk in acc.feed(obj):
                    if ttft is None:
                        ttft = (time.perf_counter() - started) * 1000
                    yield chunk
        if not done and acc.finish_reason is None:
            raise self._http.stream_error("the stream ended before the response was complete (no finish_reason)")
        calls = []
        for _, pending in sorted(acc.calls.items()):
            if not pending.name:
                raise self._http.stream_error(f"tool call {pending.id} arrived without a name")
            args = self._http.parse_arguments("".join(pending.arguments), pending.name)
            calls.append(ToolCall(pending.id, pending.name, args))
        message = Message.assistant("".join(acc.text), tuple(calls))
        yield Completion(message, acc.usage or Usage(), acc.finish_reason, ttft)

    def _raise_stream_error(self, err: Any) -> None:
        """An `{"error": ...}` object inside the stream (vLLM and others report failures this way)."""
        err_map = err if isinstance(err, Mapping) else {"message": str(err)}
        code = err_map.get("code")
        self._http.raise_api_error(
            status=code if isinstance(code, int) else None,
            error_type=str(err_map.get("type") or code or "") or None,
            message=str(err_map.get("message") or err),
        )
