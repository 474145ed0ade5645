"""Event builders for the history tests: one realistic conversation, and numbered tool calls."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from synapse_nb import events as ev
from synapse_nb.types import ContentBlock, Message, ToolCall, ToolResult, Usage

T0 = dt.datetime(2025, 3, 1, 12, 0, 0)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def conversation(sid: str = "s1", *, base: float = 0.0, secret: str = "") -> list[ev.Event]:
    """Every kind of event once or more: a session, a turn with one tool call, a failed and a cancelled turn."""
    call = ToolCall("call_1", "demo__query", {"sql": "SELECT count(*) FROM orders", "table": "orders", "k": secret})
    result = ToolResult(
        content=(
            ContentBlock("text", text=f"42 {secret}"),
            ContentBlock("image", data="iVBORw0=", mime_type="image/png"),
        ),
        structured_content={"count": 42, "note": secret},
        duration_ms=12.5,
    )
    usage = Usage(120, 30)
    return [
        ev.SessionStarted(
            session_id=sid, name="demo", model="scripted:demo", notebook="a.ipynb", kernel_id="k1", at=at(base)
        ),
        ev.TurnStarted(
            session_id=sid,
            turn_id=f"{sid}-t1",
            prompt=f"how many orders? {secret}",
            model="scripted:demo",
            at=at(base + 1),
        ),
        ev.TextDelta(session_id=sid, turn_id=f"{sid}-t1", text="Let me"),
        ev.MessageAdded(
            session_id=sid,
            message_id=f"{sid}-m0",
            seq=0,
            message=Message.user(f"how many orders? {secret}"),
            at=at(base + 1),
        ),
        ev.LlmCallFinished(
            session_id=sid,
            llm_call_id=f"{sid}-l1",
            provider="scripted",
            model="demo",
            started_at=at(base + 1),
            duration_ms=80.0,
            ttft_ms=5.0,
            usage=usage,
            stop_reason="tool_use",
        ),
        ev.MessageAdded(
            session_id=sid,
            message_id=f"{sid}-m1",
            seq=1,
            message=Message.assistant("", (call,)),
            model="scripted:demo",
            at=at(base + 2),
        ),
        ev.ToolCallStarted(
            session_id=sid,
            call=call,
            server="demo",
            tool="query",
            approval="auto",
            message_id=f"{sid}-m1",
            at=at(base + 2),
        ),
        ev.ToolCallFinished(
            session_id=sid,
            call=call,
            server="demo",
            tool="query",
            approval="auto",
            started_at=at(base + 2),
            duration_ms=12.5,
            result=result,
            message_id=f"{sid}-m1",
        ),
        ev.MessageAdded(
            session_id=sid,
            message_id=f"{sid}-m2",
            seq=2,
            message=Message.tool("call_1", "42"),
            result=result,
            at=at(base + 3),
        ),
        ev.MessageAdded(
            session_id=sid,
            message_id=f"{sid}-m3",
            seq=3,
            message=Message.assistant("There are 42 orders."),
            model="scripted:demo",
            at=at(base + 4),
        ),
        ev.TurnFinished(
            session_id=sid,
            turn_id=f"{sid}-t1",
            text="There are 42 orders.",
            iterations=2,
            usage=usage,
            duration_ms=3000.0,
            at=at(base + 4),
        ),
        ev.TurnStarted(session_id=sid, turn_id=f"{sid}-t2", prompt="again", model="scripted:demo", at=at(base + 5)),
        ev.LlmCallFinished(
            session_id=sid,
            llm_call_id=f"{sid}-l2",
            provider="scripted",
            model="demo",
            started_at=at(base + 5),
            duration_ms=1.0,
            error=f"boom {secret}",
        ),
        ev.TurnFailed(
            session_id=sid,
            turn_id=f"{sid}-t2",
            error=f"provider failed {secret}",
            error_type="ProviderError",
            iterations=1,
            usage=Usage(),
            duration_ms=500.0,
            at=at(base + 5.5),
        ),
        ev.TurnStarted(session_id=sid, turn_id=f"{sid}-t3", prompt="stop", model="scripted:demo", at=at(base + 6)),
        ev.TurnCancelled(
            session_id=sid, turn_id=f"{sid}-t3", iterations=0, usage=Usage(), duration_ms=100.0, at=at(base + 6.1)
        ),
        ev.ServerEvent(
            server="demo",
            event="connected",
            detail={"pid": 4242, "headers": {"Authorization": f"Bearer {secret}"}},
            at=at(base + 7),
        ),
        ev.ServerEvent(server="demo", event="crashed", detail=f"exit 1 {secret}", at=at(base + 8)),
    ]


def tool_call(sid: str, i: int, *, tool: str = "echo", when: dt.datetime | None = None) -> ev.ToolCallFinished:
    """A finished tool call whose id carries `i`."""
    call = ToolCall(f"{sid}-c{i}", f"demo__{tool}", {"i": i, "text": f"hello {i}"})
    return ev.ToolCallFinished(
        session_id=sid,
        call=call,
        server="demo",
        tool=tool,
        approval="auto",
        started_at=when or ev.utcnow(),
        duration_ms=float(i % 50),
        result=ToolResult((ContentBlock("text", text=f"hello {i}"),), duration_ms=float(i % 50)),
    )


def raw(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """Query the DuckDB file directly, read-only, taking turns with this and other processes' stores and readers."""
    import time

    from synapse_nb.history.db import opened

    with opened(db, read_only=True, deadline=time.monotonic() + 60) as con:
        return con.execute(sql).fetchall()
