"""Tracing of `%%synapse` cells in a shell, foreground and `--background`: the same nested spans either way.

Tracing is turned on as users do (`%config SynapseMagics.otel = True`); its pipeline (the real batching
processor) exports into the SDK's in-memory exporter instead of OTLP/HTTP, through `open_tracing`'s
`exporter` parameter."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from synapse_nb import telemetry

Script = Callable[[Any], str]

TOOLS = '''
import synapse_nb
from opentelemetry import trace
seen_spans = []

@synapse_nb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    seen_spans.append(trace.get_current_span().get_span_context().span_id)
    return a + b

@synapse_nb.tool
def shout(text: str) -> str:
    """Say it louder."""
    seen_spans.append(trace.get_current_span().get_span_context().span_id)
    return text.upper()
'''
SCRIPT = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}, {"name": "shout", "arguments": {"text": "hi"}}]},
    "Done.",
]


@pytest.fixture
def memory(ip: Any, monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """Tracing on (`%config SynapseMagics.otel = True`), exporting into memory."""
    for var in ("OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_HEADERS"):
        monkeypatch.delenv(var, raising=False)
    exporter = InMemorySpanExporter()
    monkeypatch.setattr(telemetry, "open_tracing", functools.partial(telemetry.open_tracing, exporter=exporter))
    ip.run("%config SynapseMagics.otel = True")
    return exporter


def tree(spans: list[ReadableSpan], session_id: str) -> tuple[ReadableSpan, list[tuple[str, str, int]]]:
    """The session's turn span, and (span name, parent span name, depth) of every span of its trace."""
    turns = [s for s in spans if s.name.startswith("invoke_agent")
             and (s.attributes or {}).get("synapse.session_id") == session_id]
    assert len(turns) == 1
    turn = turns[0]
    mine = [s for s in spans if s.context.trace_id == turn.context.trace_id]
    by_id = {s.context.span_id: s for s in mine}

    def name(s: ReadableSpan) -> str:
        return "chat MODEL" if s.name.startswith("chat ") else s.name  # each cell's script is a model of its own

    def depth(s: ReadableSpan) -> int:
        return 0 if s.parent is None else 1 + depth(by_id[s.parent.span_id])

    shape = sorted(
        (name(s), name(by_id[s.parent.span_id]) if s.parent is not None else "", depth(s)) for s in mine
    )
    return turn, shape


def test_a_background_turn_makes_the_same_nested_spans_as_a_foreground_one(
    ip: Any, script: Script, memory: InMemorySpanExporter
) -> None:
    ip.run(TOOLS)
    ip.cell(f"synapse --model {script(SCRIPT)} --session fg --approve auto", "Add and shout, please")
    foreground = ip.ns["_synapse"]
    ip.cell(f"synapse --model {script(SCRIPT)} --session bg --approve auto --background --out job",
            "Add and shout, please")
    background = ip.ns["job"].result(timeout=60)
    assert (foreground.status, background.status) == ("finished", "finished")
    assert ip.state.tracer.flush()
    spans = list(memory.get_finished_spans())

    fg_turn, fg_shape = tree(spans, foreground.session_id)
    bg_turn, bg_shape = tree(spans, background.session_id)
    assert fg_shape == [
        ("chat MODEL", "invoke_agent synapse_nb", 1),
        ("chat MODEL", "invoke_agent synapse_nb", 1),
        ("execute_tool add", "invoke_agent synapse_nb", 1),
        ("execute_tool shout", "invoke_agent synapse_nb", 1),
        ("invoke_agent synapse_nb", "", 0),
    ]
    assert bg_shape == fg_shape
    assert fg_turn.context.trace_id != bg_turn.context.trace_id  # each turn is a trace of its own
    for turn, result in ((fg_turn, foreground), (bg_turn, background)):
        assert (turn.attributes or {}).get("synapse.status") == "finished"
        assert (turn.attributes or {}).get("gen_ai.usage.output_tokens") == result.usage.output_tokens
    # while each tool ran, its execute_tool span was the current span (what the MCP SDK sends in _meta)
    tool_spans = {s.context.span_id for s in spans if s.name.startswith("execute_tool")}
    assert len(ip.ns["seen_spans"]) == 4
    assert set(ip.ns["seen_spans"]) == tool_spans
