"""A user's own process-global OpenTelemetry TracerProvider is left alone by the extension: not replaced, not
shut down, not sent the extension's spans; a turn run inside the user's span joins the user's trace.

In a subprocess: the global provider can be set only once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]

CODE = r'''
import functools, json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from IPython.core.interactiveshell import InteractiveShell

theirs = InMemorySpanExporter()
user_provider = TracerProvider()
user_provider.add_span_processor(SimpleSpanProcessor(theirs))
trace.set_tracer_provider(user_provider)  # the user's own setup, before the extension is loaded
tracer = trace.get_tracer("user")

from synapse_nb import telemetry
ours = InMemorySpanExporter()
telemetry.open_tracing = functools.partial(telemetry.open_tracing, exporter=ours)  # the OTLP exporter, in memory

ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "synapse_nb")
ip.run_line_magic("config", "SynapseMagics.otel = True")
ip.run_cell("""
import synapse_nb
from opentelemetry import trace
@synapse_nb.tool
def add(a: int, b: int) -> int:
    "Add two integers."
    with trace.get_tracer("user").start_as_current_span("user span in the tool"):
        return a + b
""").raise_error()
from synapse_nb.notebook.extension import get_state
state = get_state(ip)
with tracer.start_as_current_span("user cell") as cell:
    ip.run_cell_magic("synapse", "--model " + sys.argv[1] + " --approve auto", "Add 2 and 3")
assert ip.user_ns["_synapse"].status == "finished", ip.user_ns["_synapse"]
assert state.tracer.flush()
global_during = trace.get_tracer_provider() is user_provider
ip.run_line_magic("unload_ext", "synapse_nb")  # closes the extension's pipeline
with tracer.start_as_current_span("user span after unload"):
    pass

def span(s):
    return {"name": s.name, "trace": s.context.trace_id, "id": s.context.span_id,
            "parent": s.parent.span_id if s.parent is not None else None}

print(json.dumps({
    "global_during": global_during,
    "global_after": trace.get_tracer_provider() is user_provider,
    "cell": {"trace": cell.get_span_context().trace_id, "id": cell.get_span_context().span_id},
    "theirs": [span(s) for s in theirs.get_finished_spans()],
    "ours": [span(s) for s in ours.get_finished_spans()],
}))
'''


def test_the_users_global_tracer_provider_is_left_alone(tmp_path: Path) -> None:
    model = tmp_path / "script.json"
    model.write_text(json.dumps([{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, "5."]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SYNAPSE_"))}
    env.update(  # this checkout first; a history, config and data of the test's own
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]), SYNAPSE_DB=str(tmp_path / "h.duckdb"),
        XDG_CONFIG_HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path),
    )
    out = subprocess.run([sys.executable, "-c", CODE, f"scripted:{model}"], capture_output=True, text=True,
                         check=False, env=env, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["global_during"] is True
    assert found["global_after"] is True  # not replaced, and still exporting after the extension is unloaded
    theirs, ours = found["theirs"], found["ours"]
    assert sorted(s["name"] for s in theirs) == ["user cell", "user span after unload", "user span in the tool"]
    assert sorted(s["name"].split(" ")[0] for s in ours) == ["chat", "chat", "execute_tool", "invoke_agent"]
    turn = next(s for s in ours if s["name"].startswith("invoke_agent"))
    tool = next(s for s in ours if s["name"].startswith("execute_tool"))
    # the turn joined the user's trace under the cell's span; the user's span in the tool nests under the tool call
    assert turn["trace"] == found["cell"]["trace"]
    assert turn["parent"] == found["cell"]["id"]
    in_tool = next(s for s in theirs if s["name"] == "user span in the tool")
    assert in_tool["parent"] == tool["id"]
