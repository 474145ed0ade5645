"""Reading a record/replay cassette: exchanges by request fingerprint, tool outcomes by call, and the one
line that says why a request is not there (the first message that differs from the nearest recorded one).

The format and the fingerprint are synapse_nb/cassette.py's.
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cassette import FORMAT, VERSION, Mask, Request, canonical
from .errors import CassetteError, ReplayMismatchError
from .types import ToolResult

__all__ = ["Cassette", "Exchange", "ToolRecord"]


@dataclass(frozen=True, slots=True)
class Exchange:
    """A recorded model exchange (`line` is its 1-based line in the file)."""

    line: int
    fingerprint: str
    request: Mapping[str, Any]
    response: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """A recorded tool call outcome."""

    line: int
    name: str
    arguments: Mapping[str, Any]
    result: ToolResult | None
    error: str | None
    duration_ms: float


class Cassette:
    """A cassette read for replay: exchanges by fingerprint, tool outcomes by (name, arguments).

    Repeated identical requests (or calls) get their recordings in order; the last one keeps answering.
    """

    def __init__(self, path: Path, exchanges: Sequence[Exchange], tools: Sequence[ToolRecord], mask: Mask) -> None:
        self.path = path
        self.exchanges = list(exchanges)
        self.tools = list(tools)
        self.mask = mask
        self._lock = threading.Lock()
        self._by_fp: dict[str, collections.deque[Exchange]] = collections.defaultdict(collections.deque)
        for e in self.exchanges:
            self._by_fp[e.fingerprint].append(e)
        self._by_call: dict[str, collections.deque[ToolRecord]] = collections.defaultdict(collections.deque)
        for t in self.tools:
            self._by_call[self._call_key(t.name, t.arguments)].append(t)

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, exchanges={len(self.exchanges)}, tools={len(self.tools)})"

    @classmethod
    def load(cls, path: str | Path, mask: Mask) -> Cassette:
        """Read a cassette; CassetteError (with the line) when it is missing or not one."""
        p = Path(path).expanduser()
        try:
            lines = p.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CassetteError(f"cannot read the cassette {p}: {exc.strerror or exc}", path=str(p)) from None
        exchanges: list[Exchange] = []
        tools: list[ToolRecord] = []
        for n, text in enumerate(lines, 1):
            if not text.strip():
                continue
            try:
                rec = json.loads(text)
                if n == 1:
                    _check_header(rec, p)
                elif rec.get("type") == "exchange":
                    exchanges.append(Exchange(n, str(rec["fingerprint"]), rec["request"], rec["response"]))
                elif rec.get("type") == "tool":
                    result = ToolResult.from_dict(rec["result"]) if rec.get("result") is not None else None
                    tools.append(ToolRecord(n, str(rec["name"]), rec.get("arguments") or {}, result, rec.get("error"),
                                            float(rec.get("duration_ms") or 0.0)))
            except CassetteError:
                raise
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise CassetteError(f"{p}, line {n}: not a cassette record ({exc})", path=str(p), line=n) from None
        if not lines:
            raise CassetteError(f"{p} is empty, not a cassette; record one with %synapse record PATH", path=str(p))
        return cls(p, exchanges, tools, mask)

    def _call_key(self, name: str, arguments: Mapping[str, Any]) -> str:
        return canonical(json.loads(self.mask(canonical({"name": name, "arguments": dict(arguments)}))))

    @staticmethod
    def _take(queue: collections.deque[Any]) -> Any:
        return queue.popleft() if len(queue) > 1 else queue[0]

    def answer(self, request: Request) -> Exchange:
        """The recorded exchange of this request; ReplayMismatchError (one line) when there is none."""
        with self._lock:
            queue = self._by_fp.get(request.fingerprint)
            if queue:
                return self._take(queue)  # type: ignore[no-any-return]
        raise self._mismatch(request)

    def tool(self, name: str, arguments: Mapping[str, Any]) -> ToolRecord | None:
        """The recorded outcome of this call, or None when the cassette has none."""
        with self._lock:
            queue = self._by_call.get(self._call_key(name, arguments))
            return self._take(queue) if queue else None

    def _mismatch(self, request: Request) -> ReplayMismatchError:
        live = request.body
        head = f"replay: this request is not in the cassette {self.path.name}"
        fix = "re-record it (%synapse record PATH) or turn replay off (%synapse replay off)"
        same = [e for e in self.exchanges
                if (e.request.get("provider"), e.request.get("model")) == (live["provider"], live["model"])]
        if not same:
            held = sorted({f"{e.request.get('provider')}:{e.request.get('model')}" for e in self.exchanges})
            what = f"it holds {', '.join(held)}" if held else "it holds no exchange"
            return ReplayMismatchError(
                f"{head}: no exchange for {live['provider']}:{live['model']} ({what}); {fix}", path=str(self.path))
        now = [canonical(m) for m in live["messages"]]

        def common(e: Exchange) -> int:
            rec = [canonical(m) for m in e.request.get("messages") or ()]
            return next((i for i, (a, b) in enumerate(zip(now, rec, strict=False)) if a != b), min(len(now), len(rec)))

        nearest = max(same, key=lambda e: (common(e), -abs(len(e.request.get("messages") or ()) - len(now)), -e.line))
        i = common(nearest)
        recorded = list(nearest.request.get("messages") or ())
        where = f"the nearest recorded request (line {nearest.line})"
        if i < len(now) and i < len(recorded):
            what = (f"message #{i + 1} ({live['messages'][i]['role']}) differs from {where}: now "
                    f"{_snippet(live['messages'][i])}, recorded {_snippet(recorded[i])}")
        elif i < len(now):
            what = f"message #{i + 1} ({_snippet(live['messages'][i])}) is new: {where} ends before it"
        elif i < len(recorded):
            what = f"the request ends after message #{i}; {where} goes on with {_snippet(recorded[i])}"
        else:
            keys = [k for k in ("system", "tools", "params")
                    if canonical(live.get(k)) != canonical(nearest.request.get(k))]
            what = f"the messages match {where}, but {_differs(keys, live, nearest.request)}"
            return ReplayMismatchError(f"{head}: {what}; {fix}", path=str(self.path))
        return ReplayMismatchError(f"{head}: {what}; {fix}", path=str(self.path), message_index=i)


def _check_header(rec: Any, path: Path) -> None:
    if not isinstance(rec, Mapping) or rec.get("format") != FORMAT:
        raise CassetteError(f"{path} is not a synapse_nb cassette (its first line has no \"format\": "
                            f"\"{FORMAT}\"); record one with %synapse record PATH", path=str(path), line=1)
    if rec.get("version") != VERSION:
        raise CassetteError(f"{path} is a version {rec.get('version')} cassette; this synapse_nb reads version "
                            f"{VERSION}: re-record it", path=str(path), line=1)


def _snippet(message: Mapping[str, Any], limit: int = 60) -> str:
    """A message in a few words, on one line."""
    text = " ".join(str(message.get("content") or "").split())
    calls = message.get("tool_calls") or ()
    if calls:
        text = (text + " " if text else "") + "calls " + ", ".join(str(c.get("name")) for c in calls)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{message.get('role')} {json.dumps(text, ensure_ascii=False)}"


def _differs(keys: Sequence[str], live: Mapping[str, Any], recorded: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for key in keys:
        if key == "tools":
            now, then = set(live.get("tool_names") or ()), set(recorded.get("tool_names") or ())
            change = [f"+{n}" for n in sorted(now - then)] + [f"-{n}" for n in sorted(then - now)]
            parts.append("the tools offered differ" + (f" ({', '.join(change)})" if change else " (their schemas)"))
        elif key == "system":
            parts.append("the system prompt differs")
        else:
            parts.append(f"the parameters differ (now {canonical(live.get(key))}, recorded "
                         f"{canonical(recorded.get(key))})")
    return " and ".join(parts) or "it differs"
