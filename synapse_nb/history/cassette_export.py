"""A recorded session written as a record/replay cassette (`History.export_cassette`), from the history alone.

Each of the session's own LLM calls that answered (no error, not a server's sampling request) becomes
an exchange: its request is rebuilt from `llm_calls.request` (system, params, tools digest and names,
how many transcript messages were sent: migration 0006) and the session's first that-many transcript
messages; its response is the assistant message that followed, with the call's usage and stop reason.
Each tool call of those replies becomes a tool line. The fingerprints are those a live recording
computes (synapse_nb/cassette.py), so the cassette replays the session's turns. The stream of an
exported response is one text chunk and one chunk per tool call (the history keeps whole messages,
not the pieces they streamed in). Calls recorded before migration 0006, and turns run with
`--no-history` (their messages are not in the file), cannot be exported: a one-line HistoryError says so.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cassette import CassetteWriter, build_request, response_record
from ..errors import HistoryError
from ..masking import SecretMask
from ..protocols import Completion
from ..types import Message, ToolResult, Usage

if TYPE_CHECKING:
    from .reader import History

__all__ = ["export_cassette"]


def _json(value: Any) -> Any:
    if isinstance(value, str) and value:
        return json.loads(value)
    return value if isinstance(value, dict | list) else None


def _value(value: Any) -> Any:
    """A DataFrame cell as a plain value (NaN / NA / NaT -> None)."""
    if value is None:
        return None
    try:
        if value != value:  # NaN, pd.NA raises in bool()
            return None
    except TypeError:
        return None
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


def _usage(row: Mapping[str, Any]) -> Usage:
    fields: dict[str, int] = {}
    for f in dataclasses.fields(Usage):
        v = _value(row.get(f.name))
        if v is not None:
            fields[f.name] = int(v)
    return Usage(**fields)


def export_cassette(history: History, session: str, path: str | Path) -> Path:
    """Write session `session` (name or id prefix) of `history` as a cassette at `path`; returns the path."""
    session_id = history.find_session(session)
    if session_id is None:
        raise HistoryError(f"no session named {session!r} (or whose id starts with it) in {history.path}")
    transcript, _ = history.transcript(session_id)
    calls = history.llm_calls(session_id=session_id).to_dict("records")
    tools = {str(r["tool_call_id"]): r for r in history.tool_calls(session_id=session_id).to_dict("records")}
    mine = [c for c in calls if _value(c.get("origin")) is None and _value(c.get("error")) is None]
    if not mine:
        raise HistoryError(f"session {session!r} has no answered model calls to export")
    missing = [c for c in mine if _json(_value(c.get("request"))) is None]
    if missing:
        raise HistoryError(
            f"session {session!r} was recorded before requests were kept (history migration 0006): "
            "record it again with %synapse record PATH"
        )
    out = Path(path).expanduser()
    writer = CassetteWriter(out, SecretMask())
    try:
        for call in mine:
            request = _json(call["request"])
            n = int(request.get("messages") or 0)
            if n >= len(transcript) or transcript[n].role != "assistant":
                raise HistoryError(
                    f"session {session!r}: the messages of the model call at {call.get('started_at')} are not all in "
                    "the history (a turn run with --no-history?); it cannot be exported"
                )
            reply = transcript[n]
            built = build_request(
                str(call["provider"]), str(call["model"]), transcript[:n], (), system=request.get("system"),
                params=request.get("params") or {}, mask=writer.mask, digest=str(request.get("tools")),
                tool_names=list(request.get("tool_names") or ()),
            )
            stream: list[dict[str, Any]] = [{"text": reply.content}] if reply.content else []
            stream += [{"index": i, "id": c.id, "name": c.name, "arguments": json.dumps(dict(c.arguments))}
                       for i, c in enumerate(reply.tool_calls)]
            completion = Completion(Message.assistant(reply.content, reply.tool_calls), _usage(call),
                                    _value(call.get("stop_reason")))
            writer.exchange(built, response_record(stream, completion))
            for c in reply.tool_calls:
                row = tools.get(c.id)
                if row is None:
                    continue
                result = _json(_value(row.get("result")))
                writer.tool(c.name, c.arguments, ToolResult.from_dict(result) if result is not None else None,
                            _value(row.get("error")), float(_value(row.get("duration_ms")) or 0.0))
    except BaseException:
        writer.close()
        out.unlink(missing_ok=True)  # nothing half-written
        raise
    writer.close()
    return out
