"""When tracing is on, the real OTLP/HTTP export to a collector that cannot be reached (said once, cells
unharmed), the missing `otel` extra (one line), and a kernel that does not trace importing no SDK."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from synapse_nb import telemetry
from synapse_nb.agent.orchestrator import Agent
from synapse_nb.agent.tools import ToolRegistry, tool
from synapse_nb.notebook.state import SynapseState
from synapse_nb.providers.scripted import ScriptedProvider
from synapse_nb.telemetry.spans import SpanSink
from tests.support.local_servers import refusing_port

OTEL_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
             "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "SYNAPSE_OTEL_CONTENT")


@pytest.fixture
def no_otel_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in OTEL_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections for the test (bound and held, never listened on)."""
    with refusing_port() as port:
        yield port


@pytest.fixture
def unreachable(no_otel_env: pytest.MonkeyPatch, closed_port: int) -> str:
    endpoint = f"http://127.0.0.1:{closed_port}"
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")  # the exporter's retries give up quickly
    return endpoint


def test_tracing_is_wanted_by_the_setting_else_by_the_standard_variables() -> None:
    assert not telemetry.wanted(None, {})
    assert telemetry.wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert telemetry.wanted(None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert not telemetry.wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": " "})
    assert not telemetry.wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"})
    assert not telemetry.wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"})
    assert telemetry.wanted(True, {})  # the default endpoint, localhost:4318
    assert not telemetry.wanted(False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert telemetry.content_wanted({"SYNAPSE_OTEL_CONTENT": "1"})
    assert not telemetry.content_wanted({})
    assert not telemetry.content_wanted({"SYNAPSE_OTEL_CONTENT": "0"})


@tool
def count(n: int) -> str:
    """Count to n."""
    return " ".join(str(i) for i in range(1, n + 1))


@pytest.mark.anyio
async def test_an_unreachable_collector_is_said_once_and_the_turns_go_on(
    unreachable: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tracing = telemetry.open_tracing()
    try:
        tools = ToolRegistry()
        tools.register(count)
        for turn in range(2):
            script = [{"tool_calls": [{"name": "count", "arguments": {"n": 3}}]}, "Counted {result}."]
            agent = Agent(ScriptedProvider(script), tools, sinks=[tracing.sink], tool_scope=tracing.sink.tool_scope)
            result = await agent.ask(f"count, turn {turn}")
            assert (result.status, result.text) == ("finished", "Counted 1 2 3.")
            tracing.flush()  # the export fails (in this thread, here; in the worker thread in a notebook)
        assert tracing.exporter.failures == 2
        assert tracing.export_failed
    finally:
        tracing.close()
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in said] == ["synapse_nb.telemetry"]
    message = said[0].getMessage()
    assert unreachable + "/v1/traces" in message
    assert "Connection refused" in message
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]  # its retry lines stay out


def test_the_missing_extra_is_said_in_one_line_once(
    no_otel_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    no_otel_env.setitem(sys.modules, "opentelemetry.sdk", None)  # as if opentelemetry-sdk were not installed
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert not telemetry.available()
    with pytest.raises(ImportError, match=r"pip install 'synapse_nb\[otel\]'"):
        telemetry.open_tracing()
    state = SynapseState()
    assert state.tracing() is None
    assert state.tracing() is None  # asked again (the next turn): nothing more is said
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [telemetry.MISSING_EXTRA]
    assert "pip install 'synapse_nb[otel]'" in said[0]
    assert "\n" not in said[0]


def test_the_kernel_state_opens_tracing_once_and_the_setting_turns_it_off(unreachable: str) -> None:
    state = SynapseState()
    try:
        sink = state.tracing()
        assert isinstance(sink, SpanSink)
        assert state.tracing() is sink
        state.magics = SimpleNamespace(otel=False)  # %config SynapseMagics.otel = False
        assert state.tracing() is None
        state.magics = SimpleNamespace(otel=None)  # back to the variables: a new pipeline
        again = state.tracing()
        assert again is not None
        assert again is not sink
    finally:
        state.close_tracing()
    assert state.flush_tracing() is False


@pytest.mark.process
def test_a_kernel_that_does_not_trace_imports_no_opentelemetry_sdk() -> None:
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\n"
        "ip.run_line_magic('load_ext', 'synapse_nb')\n"
        "from synapse_nb.notebook.extension import get_state\n"
        "print(get_state(ip).tracing(), sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in OTEL_VARS}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         timeout=120)
    assert out.stdout.strip() == "None []"


@pytest.mark.anyio
async def test_the_collectors_header_values_are_secrets_of_the_spans_and_the_history(
    no_otel_env: pytest.MonkeyPatch,
) -> None:
    token = "planted-otlp-token-123"
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{token},x-team=notebooks")
    assert telemetry.header_secrets() == [f"Bearer {token}", "notebooks"]
    memory = InMemorySpanExporter()
    tracing = telemetry.open_tracing(content=True, exporter=memory)
    try:
        agent = Agent(ScriptedProvider([f"I saw {token}."]), ToolRegistry(), sinks=[tracing.sink])
        await agent.ask(f"the header was Bearer {token}")
        tracing.flush()
    finally:
        tracing.close()
    text = json.dumps([dict(s.attributes or {}) for s in memory.get_finished_spans()])
    assert token not in text
    assert "[REDACTED]" in text
    no_otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")  # nothing is exported here
    state = SynapseState()
    try:
        assert state.tracing() is not None
        assert f"Bearer {token}" in state.secrets
    finally:
        state.close_tracing()
