"""Scripted replies for tests/support/llm_server.py and how each renders in the OpenAI and Anthropic wire formats.

Replies are wire-neutral; the server renders one per request in the format of the path called, as a list
of SSE events, each flagged when it carries answer content (where `.gated()` and `.cut()` act by default).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Call",
    "Frame",
    "Gate",
    "Reply",
    "Wire",
    "call",
    "error",
    "error_body",
    "raw_body",
    "raw_sse",
    "render",
    "reply_from_dict",
    "stream_error",
    "text",
    "tool_calls",
]

Wire = Literal["openai", "anthropic"]
GATE_TIMEOUT = 10.0  # a gate nobody opens lets go after this long, so no server thread hangs forever


class Gate:
    """A point where the server holds a response until the test opens it (a threading.Event with state)."""

    def __init__(self) -> None:
        self._open = threading.Event()
        self._reached = threading.Event()
        self.timed_out = False

    def open(self) -> None:
        self._open.set()

    @property
    def holding(self) -> bool:
        """True while the server waits at this gate (reached, not yet opened)."""
        return self._reached.is_set() and not self._open.is_set() and not self.timed_out

    def wait_reached(self, timeout: float = 5.0) -> bool:
        return self._reached.wait(timeout)

    def hold(self) -> None:
        """Called by the server: mark the gate reached and wait until it opens (or times out)."""
        self._reached.set()
        if not self._open.wait(GATE_TIMEOUT):
            self.timed_out = True


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call of a scripted reply; `arguments` may be a dict or a raw (possibly invalid) JSON string."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(dict(self.arguments))


def call(name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None) -> Call:
    return Call(name, {} if arguments is None else arguments, id)


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted response. Build with the functions below; render happens per request."""

    kind: Literal["answer", "error", "stream_error", "raw_sse", "raw_body"]
    text: tuple[str, ...] = ()
    calls: tuple[Call, ...] = ()
    pieces: int = 3
    interleave: bool = False
    usage: tuple[int, int] = (11, 7)  # (all prompt tokens, output tokens)
    cache: tuple[int, int] = (0, 0)  # (prompt tokens read from the cache, written to it): parts of usage[0]
    stop_reason: str | None = None
    status: int = 200
    error_type: str | None = None
    message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    frames: tuple[str, ...] = ()
    body: bytes = b""
    content_type: str = "application/json"
    gate: Gate | None = None
    gate_after: int | None = None
    cut_stream: bool = False
    cut_after: int | None = None
    hold: Gate | None = None
    linger: Gate | None = None
    pace: float = 0.0

    def paced(self, seconds: float) -> Reply:
        """Wait `seconds` before each content event after the first (a model producing tokens at a pace)."""
        return dataclasses.replace(self, pace=seconds)

    def gated(self, gate: Gate, after: int | None = None) -> Reply:
        """Hold the stream after `after` events (default: right after the first event carrying content)."""
        return dataclasses.replace(self, gate=gate, gate_after=after)

    def lingering(self, gate: Gate) -> Reply:
        """Hold the end of the body (after the last event) until the test opens the gate: a server slow to close."""
        return dataclasses.replace(self, linger=gate)

    def cut(self, after: int | None = None) -> Reply:
        """Drop the connection after `after` events (default: after the first content event), mid-chunk."""
        return dataclasses.replace(self, cut_stream=True, cut_after=after)

    def cached(self, read: int, write: int = 0) -> Reply:
        """Report `read` prompt tokens as read from the provider's cache and `write` as written to it."""
        return dataclasses.replace(self, cache=(read, write))

    def held(self, gate: Gate) -> Reply:
        """Send nothing, not even the status line, until `gate` opens (slow first byte)."""
        return dataclasses.replace(self, hold=gate)


def _split(s: str, pieces: int) -> list[str]:
    if pieces <= 1 or len(s) <= 1:
        return [s]
    size = max(1, -(-len(s) // pieces))
    return [s[i : i + size] for i in range(0, len(s), size)]


def text(
    content: str | Sequence[str], *, pieces: int = 3, usage: tuple[int, int] = (11, 7), stop_reason: str | None = None
) -> Reply:
    """A streamed text answer, split into `pieces` (or given as a list of pieces)."""
    parts = tuple(_split(content, pieces)) if isinstance(content, str) else tuple(content)
    return Reply("answer", text=parts, pieces=pieces, usage=usage, stop_reason=stop_reason)


def tool_calls(
    *calls: Call, text: str | Sequence[str] = "", pieces: int = 3, interleave: bool = False,
    usage: tuple[int, int] = (11, 7), stop_reason: str | None = None,
) -> Reply:
    """A reply asking for tools; each call's arguments stream in `pieces` fragments (interleaved if asked)."""
    parts = (tuple(_split(text, pieces)) if text else ()) if isinstance(text, str) else tuple(text)
    return Reply(
        "answer", text=parts, calls=calls, pieces=pieces, interleave=interleave, usage=usage, stop_reason=stop_reason
    )


def error(
    status: int, message: str | None = None, *, retry_after: float | None = None, error_type: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """An HTTP error with the wire's JSON error body (and a `retry-after` header if given)."""
    h = dict(headers or {})
    if retry_after is not None:
        h["retry-after"] = f"{retry_after:g}"
    return Reply(
        "error", status=status, message=message or f"scripted error {status}", error_type=error_type,
        headers=tuple(h.items()),
    )


def stream_error(error_type: str = "overloaded_error", message: str = "Overloaded", *, after_text: str = "") -> Reply:
    """A 200 stream that starts (optionally with some text) and then reports an error event."""
    return Reply("stream_error", text=(after_text,) if after_text else (), error_type=error_type, message=message)


def raw_sse(*frames: str) -> Reply:
    """A 200 event stream of exactly these frames (each sent as written, e.g. "data: {broken\\n\\n")."""
    return Reply("raw_sse", frames=frames)


def raw_body(status: int, body: bytes | str, content_type: str = "application/json") -> Reply:
    """Any status with any body, sent with a Content-Length."""
    data = body.encode() if isinstance(body, str) else body
    return Reply("raw_body", status=status, body=data, content_type=content_type)


def reply_from_dict(d: Mapping[str, Any]) -> Reply:
    """A reply from its JSON form (standalone scripts): text (a string, or a list of its pieces) / tool_calls /
    error / stream_error / raw_sse."""
    usage = tuple(d.get("usage", (11, 7)))
    pieces = int(d.get("pieces", 3))
    if "error" in d:
        return error(int(d["error"]), d.get("message"), retry_after=d.get("retry_after"), error_type=d.get("type"))
    if "stream_error" in d:
        return stream_error(str(d["stream_error"]), str(d.get("message", "error")))
    if "raw_sse" in d:
        return raw_sse(*d["raw_sse"])
    read, write = tuple(d.get("cache", (0, 0)))
    if "tool_calls" in d:
        calls = [call(c["name"], c.get("arguments"), id=c.get("id")) for c in d["tool_calls"]]
        return tool_calls(*calls, text=d.get("text", ""), pieces=pieces, usage=(usage[0], usage[1])).cached(read, write)
    content = d.get("text", "")
    pieces_given = [str(p) for p in content] if isinstance(content, list) else str(content)  # a list: the pieces
    reply = text(pieces_given, pieces=pieces, usage=(usage[0], usage[1]), stop_reason=d.get("stop_reason"))
    return reply.cached(read, write)


# ---- rendering -------------------------------------------------------------------------------------------

Frame = tuple[bytes, bool]  # (bytes of one SSE event, whether it carries answer content)


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _argument_pieces(reply: Reply) -> list[tuple[int, str]]:
    per_call = [[(i, p) for p in _split(c.arguments_json, reply.pieces)] for i, c in enumerate(reply.calls)]
    if reply.interleave:
        merged = itertools.zip_longest(*per_call)
        return [x for group in merged for x in group if x is not None]
    return [x for lst in per_call for x in lst]


def _openai_frames(reply: Reply, model: str) -> list[Frame]:
    base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    frames: list[Frame] = [(chunk({"role": "assistant", "content": ""}), False)]
    frames += [(chunk({"content": t}), True) for t in reply.text]
    if reply.kind == "stream_error":
        frames.append((_sse({"error": {"message": reply.message, "type": reply.error_type, "code": None}}), False))
        return frames
    started: set[int] = set()
    for i, piece in _argument_pieces(reply):
        c = reply.calls[i]
        if i not in started:
            started.add(i)
            fn = {"name": c.name, "arguments": ""}
            tc = {"index": i, "id": c.id or f"call_{i}", "type": "function", "function": fn}
            frames.append((chunk({"tool_calls": [tc]}), True))
        frames.append((chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}), True))
    finish = reply.stop_reason or ("tool_calls" if reply.calls else "stop")
    frames.append((chunk({}, finish), False))
    usage = {
        "prompt_tokens": reply.usage[0], "completion_tokens": reply.usage[1], "total_tokens": sum(reply.usage),
        "prompt_tokens_details": {"cached_tokens": reply.cache[0]},
    }
    frames.append((_sse({**base, "choices": [], "usage": usage}), False))
    frames.append((_sse("[DONE]"), False))
    return frames


def _anthropic_frames(reply: Reply, model: str) -> list[Frame]:
    message: dict[str, Any] = {
        "id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {
            # Anthropic counts cached prompt tokens apart from input_tokens.
            "input_tokens": max(0, reply.usage[0] - reply.cache[0] - reply.cache[1]),
            "cache_creation_input_tokens": reply.cache[1], "cache_read_input_tokens": reply.cache[0],
            "output_tokens": 1,
        },
    }
    frames: list[Frame] = [(_sse({"type": "message_start", "message": message}, "message_start"), False)]
    frames.append((_sse({"type": "ping"}, "ping"), False))
    index = 0
    if reply.text:
        start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        frames.append((_sse(start, "content_block_start"), False))
        for t in reply.text:
            delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
            frames.append((_sse(delta, "content_block_delta"), True))
        frames.append((_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"), False))
        index = 1
    if reply.kind == "stream_error":
        err = {"type": "error", "error": {"type": reply.error_type, "message": reply.message}}
        frames.append((_sse(err, "error"), False))
        return frames
    block_of = {i: index + i for i in range(len(reply.calls))}
    started: set[int] = set()
    pieces = _argument_pieces(reply)
    last_piece = {i: max(n for n, (j, _) in enumerate(pieces) if j == i) for i in range(len(reply.calls))}
    for n, (i, piece) in enumerate(pieces):
        c = reply.calls[i]
        if i not in started:
            started.add(i)
            block = {"type": "tool_use", "id": c.id or f"toolu_{i}", "name": c.name, "input": {}}
            start = {"type": "content_block_start", "index": block_of[i], "content_block": block}
            frames.append((_sse(start, "content_block_start"), True))
        json_delta = {"type": "input_json_delta", "partial_json": piece}
        delta = {"type": "content_block_delta", "index": block_of[i], "delta": json_delta}
        frames.append((_sse(delta, "content_block_delta"), True))
        if n == last_piece[i]:
            frames.append((_sse({"type": "content_block_stop", "index": block_of[i]}, "content_block_stop"), False))
    stop = reply.stop_reason or ("tool_use" if reply.calls else "end_turn")
    delta_msg = {
        "type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": reply.usage[1]},
    }
    frames.append((_sse(delta_msg, "message_delta"), False))
    frames.append((_sse({"type": "message_stop"}, "message_stop"), False))
    return frames


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
    429: "rate_limit_error", 500: "api_error", 529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_error", 404: "invalid_request_error",
    429: "rate_limit_exceeded", 500: "server_error",
}


def error_body(reply: Reply, wire: Wire) -> bytes:
    if wire == "anthropic":
        kind = reply.error_type or _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": reply.message}}).encode()
    kind = reply.error_type or _OPENAI_ERROR_TYPES.get(reply.status, "server_error")
    return json.dumps({"error": {"message": reply.message, "type": kind, "param": None, "code": None}}).encode()


def render(reply: Reply, wire: Wire, model: str) -> list[Frame]:
    """The SSE events of a streamed reply (`answer` or `stream_error`) in `wire` format."""
    return (_openai_frames if wire == "openai" else _anthropic_frames)(reply, model)
