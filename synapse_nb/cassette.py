"""Record/replay cassettes: the JSON-lines format, the request fingerprint, and writing them.

(Reading one back and matching requests against it is cassette_reader.py's.) A cassette is a UTF-8
JSON-lines file, one record per line, keys in a fixed order, so that it reads well and diffs line by line:

    {"format": "synapse_nb.cassette", "version": 1}
    {"type": "exchange", "fingerprint": "sha256:...", "request": {...}, "response": {...}}
    {"type": "tool", "name": "demo__query", "arguments": {...}, "result": {...}, "error": null, "duration_ms": 3.1}

- `request` is the normalised request: `provider`, `model`, `system`, `params` (e.g. Anthropic's
  `max_tokens`), `tools` (digest of the tool schemas offered), `tool_names`, `messages`.
- `response` is the full streamed answer: `stream` (the chunks as they came: `{"text": ...}` or
  `{"index", "id", "name", "arguments"}` for a piece of a tool call), the final `text` and
  `tool_calls`, `usage` (every field of types.Usage) and `stop_reason`.
- a `tool` line is one tool call's outcome: the ToolResult as recorded in the history, or the error line.

Normalisation (what the fingerprint ignores): tool call ids, which the provider (or the agent) invents
afresh on every run, become `call_1`, `call_2`, ... in order of first appearance; the `name` of a tool
message (it repeats the call's); image data become their sha256; session, turn and call ids, times and
keys never enter a request. The fingerprint is `sha256:` and the first 32 hex digits of the SHA-256 of
the masked canonical JSON (sorted keys, no spaces) of the normalised request. Masking comes first so
that a request hashes the same live, replayed and exported from the history file (where secrets are
already `[REDACTED]`): every line written is masked by the caller's mask (masking.py, as the history).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from .errors import CassetteError
from .protocols import Completion, ProviderChunk, TextChunk, ToolCallChunk
from .types import Message, ToolCall, ToolResult, ToolSpec, Usage

__all__ = [
    "FORMAT",
    "VERSION",
    "CassetteWriter",
    "Mask",
    "Request",
    "RequestDigest",
    "ToolsDigest",
    "build_request",
    "canonical",
    "chunk_record",
    "normalise_messages",
    "provider_params",
    "replay_chunks",
    "response_record",
    "tools_digest",
]

FORMAT = "synapse_nb.cassette"
VERSION = 1

Mask = Callable[[str], str]
"""Replaces secrets in text (a masking.SecretMask): applied to every line before it is written or hashed."""


def canonical(obj: Any) -> str:
    """Sorted keys, no spaces, non-ASCII as is: the text a fingerprint hashes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalise_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as a request is fingerprinted: tool call ids aliased, tool names and image data left out."""
    aliases: dict[str, str] = {}

    def alias(call_id: str) -> str:
        return aliases.setdefault(call_id, f"call_{len(aliases) + 1}")

    out: list[dict[str, Any]] = []
    for m in messages:
        d: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            d["tool_calls"] = [
                {"id": alias(c.id), "name": c.name, "arguments": dict(c.arguments)} for c in m.tool_calls
            ]
        if m.tool_call_id is not None:
            d["tool_call_id"] = alias(m.tool_call_id)
        if m.is_error:
            d["is_error"] = True
        if m.images:
            d["images"] = [{"mime_type": b.mime_type, "sha256": _sha(b.data or "")} for b in m.images]
        out.append(d)
    return out


def tools_digest(specs: Sequence[ToolSpec]) -> str:
    """A digest of the tools offered (names, descriptions, input schemas), in the order offered."""
    schemas = [{"name": s.name, "description": s.description, "input_schema": dict(s.input_schema)} for s in specs]
    return _sha(canonical(schemas))[:16]


class ToolsDigest:
    """`tools_digest` remembered for the last list of spec objects: the agent offers the same ToolSpec
    objects call after call, so the schemas are serialised only when the offer changes."""

    def __init__(self) -> None:
        self._specs: tuple[ToolSpec, ...] = ()
        self._digest = tools_digest(())

    def __call__(self, specs: Sequence[ToolSpec]) -> str:
        if len(specs) != len(self._specs) or any(a is not b for a, b in zip(specs, self._specs, strict=True)):
            self._specs, self._digest = tuple(specs), tools_digest(specs)
        return self._digest


class RequestDigest:
    """What a model request held besides the transcript, as `LlmCallFinished.request` records it (so that a
    cassette can be exported from the history): system prompt, provider params, the digest and names of the
    tools offered, how many transcript messages. One per session: the tools' digest is remembered
    (`ToolsDigest`), so describing a request costs little when the offer did not change."""

    def __init__(self) -> None:
        self._tools = ToolsDigest()

    def __call__(self, provider: Any, system: str | None, specs: Sequence[ToolSpec], messages: int) -> dict[str, Any]:
        return {
            "system": system or None, "params": provider_params(provider), "tools": self._tools(specs),
            "tool_names": [s.name for s in specs], "messages": messages,
        }


def provider_params(provider: Any) -> dict[str, Any]:
    """The request parameters a provider sends besides messages and tools (its `params` mapping if it has
    one, else Anthropic's `max_tokens` and any `extra_body`)."""
    params = getattr(provider, "params", None)
    if isinstance(params, Mapping):
        return dict(params)
    out: dict[str, Any] = {}
    max_tokens = getattr(provider, "max_tokens", None)
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        out["max_tokens"] = max_tokens
    extra = getattr(provider, "extra_body", None)
    if isinstance(extra, Mapping) and extra:
        out["extra_body"] = dict(extra)
    return out


@dataclass(frozen=True, slots=True)
class Request:
    """A normalised, masked model request and its fingerprint."""

    body: Mapping[str, Any]
    fingerprint: str

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body["messages"])


def build_request(
    provider: str, model: str, messages: Sequence[Message] | Sequence[Mapping[str, Any]], specs: Sequence[ToolSpec],
    *, system: str | None, params: Mapping[str, Any], mask: Mask, digest: str | None = None,
    tool_names: Sequence[str] | None = None,
) -> Request:
    """The request as recorded and matched. `messages` are Messages, or already normalised dicts (the
    history export); `digest` and `tool_names` stand in for `specs` when the schemas are not at hand."""
    if messages and isinstance(messages[0], Message):
        normal = normalise_messages(cast("Sequence[Message]", messages))
    else:
        normal = [dict(m) for m in cast("Sequence[Mapping[str, Any]]", messages)]
    body = {
        "provider": provider,
        "model": model,
        "system": system or None,
        "params": dict(params),
        "tools": digest if digest is not None else tools_digest(specs),
        "tool_names": list(tool_names) if tool_names is not None else [s.name for s in specs],
        "messages": normal,
    }
    # Masked as the text of a line (as it is written), kept in the order above; hashed in canonical form.
    masked = json.loads(mask(json.dumps(body, ensure_ascii=False, default=str)))
    return Request(masked, "sha256:" + _sha(canonical(masked))[:32])


# -- responses


def chunk_record(chunk: TextChunk | ToolCallChunk) -> dict[str, Any]:
    """One streamed chunk as a `stream` item."""
    if isinstance(chunk, TextChunk):
        return {"text": chunk.text}
    d: dict[str, Any] = {"index": chunk.index}
    if chunk.id is not None:
        d["id"] = chunk.id
    if chunk.name is not None:
        d["name"] = chunk.name
    d["arguments"] = chunk.arguments_delta
    return d


def response_record(stream: Sequence[Mapping[str, Any]], completion: Completion) -> dict[str, Any]:
    """The `response` of an exchange: the stream, the final message, usage and stop reason (no timings)."""
    return {
        "stream": list(stream),
        "text": completion.message.content,
        "tool_calls": [c.to_dict() for c in completion.message.tool_calls],
        "usage": dataclasses.asdict(completion.usage),
        "stop_reason": completion.stop_reason,
    }


def _usage(d: Any) -> Usage:
    names = {f.name for f in dataclasses.fields(Usage)}
    return Usage(**{k: int(v) for k, v in (d or {}).items() if k in names and v is not None})


def replay_chunks(response: Mapping[str, Any]) -> list[ProviderChunk]:
    """The chunks a recorded response streams again, ending with its Completion."""
    chunks: list[ProviderChunk] = []
    for item in response.get("stream") or ():
        if "text" in item:
            chunks.append(TextChunk(str(item["text"])))
        else:
            chunks.append(ToolCallChunk(
                int(item["index"]), id=item.get("id"), name=item.get("name"),
                arguments_delta=str(item.get("arguments", "")),
            ))
    calls = tuple(ToolCall.from_dict(c) for c in response.get("tool_calls") or ())
    message = Message.assistant(str(response.get("text") or ""), calls)
    chunks.append(Completion(message, _usage(response.get("usage")), response.get("stop_reason")))
    return chunks


# -- writing


class CassetteWriter:
    """Writes a cassette line by line (each flushed, so a crash loses at most the line being written).

    Thread-safe. Every line passes `mask` as text, like the history's lines, so no secret is written.
    """

    def __init__(self, path: str | Path, mask: Mask) -> None:
        self.path = Path(path).expanduser()
        self.mask = mask
        self._lock = threading.Lock()
        self.exchanges = 0
        self.tools = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] | None = self.path.open("w", encoding="utf-8")
        except OSError as exc:
            raise CassetteError(
                f"cannot write the cassette {self.path}: {exc.strerror or exc}", path=str(self.path)
            ) from None
        self._write({"format": FORMAT, "version": VERSION})

    def __repr__(self) -> str:
        return f"CassetteWriter({str(self.path)!r}, exchanges={self.exchanges}, tools={self.tools})"

    def _write(self, record: Mapping[str, Any]) -> None:
        line = self.mask(json.dumps(record, ensure_ascii=False, default=str))
        with self._lock:
            if self._file is None:
                return
            self._file.write(line + "\n")
            self._file.flush()

    def exchange(self, request: Request, response: Mapping[str, Any]) -> None:
        """One model exchange: its (already masked) request and the response."""
        self._write({"type": "exchange", "fingerprint": request.fingerprint, "request": dict(request.body),
                     "response": dict(response)})
        self.exchanges += 1

    def tool(
        self, name: str, arguments: Mapping[str, Any], result: ToolResult | None, error: str | None,
        duration_ms: float,
    ) -> None:
        """One tool call's outcome (a result, or the error line the model was told)."""
        self._write({
            "type": "tool", "name": name, "arguments": dict(arguments),
            "result": result.to_dict() if result is not None else None, "error": error,
            "duration_ms": duration_ms,  # as measured: rounded here, a replay could show another whole ms
        })
        self.tools += 1

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    @property
    def closed(self) -> bool:
        return self._file is None
