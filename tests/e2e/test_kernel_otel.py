"""OpenTelemetry from a real kernel: a `%%synapse` turn with two MCP tool calls exported over OTLP/HTTP to a
real receiver, Arize Phoenix (installed by `make tools` into .tools/phoenix, started here on 127.0.0.1), and
read back from Phoenix's own REST API with its nesting and attributes; the MCP server is traced too, and its
spans join the turn's trace through the `traceparent` it got in `_meta`. Then a collector that cannot be
reached: every cell works and the kernel says so once."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel_session import Kernel, kernel_env
from tests.support.local_servers import LAST_RESORT, free_port, refusing_port, stop, wait_started

# The module's Phoenix starts within its first test: ~13 s of CPU, ~100 s of the clock beside other work on 2 cores.
pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel, pytest.mark.timeout(LAST_RESORT + 180)]
PHOENIX_CPU = 120.0  # seconds of CPU Phoenix may use before it must answer /healthz (it needs ~13 s)

REPO = Path(__file__).resolve().parents[2]
PHOENIX = REPO / ".tools" / "phoenix" / "bin" / "phoenix"
META_SERVER = REPO / "tests" / "telemetry" / "meta_server.py"
PROMPT = "Count to three and show what the server saw"
OTEL_PREFIXES = ("OTEL_", "SYNAPSE_OTEL_")


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `check` until it returns something truthy (a server in another process has no event to wait on)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        time.sleep(0.1)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def healthy(url: str) -> bool:
    """True once the server at `url` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


PORT_TAKEN = ("Failed to bind to address", "address already in use")
"""What Phoenix says when a port it was given was taken between our free_port() and its bind (it binds gRPC
on [::] too, where another program may hold the number): the fixture then starts it again on other ports."""


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Arize Phoenix serving OTLP/HTTP and its REST API on a free port of 127.0.0.1; its base URL."""
    if not PHOENIX.is_file():
        pytest.fail(f"Arize Phoenix is not installed at {PHOENIX}: run `make tools` (or `make otel-receiver`)")
    for attempt in range(3):
        work = tmp_path_factory.mktemp("phoenix")
        port = free_port()
        env = {
            "PATH": os.environ.get("PATH", ""), "HOME": str(work), "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_WORKING_DIR": str(work),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        log_path = work / "phoenix.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            if wait_started(proc, functools.partial(healthy, url), PHOENIX_CPU):
                yield url
                return
            said = log_path.read_text(errors="replace")
            if proc.poll() is None:
                pytest.fail(f"phoenix serve did not answer /healthz after {PHOENIX_CPU:g} s of CPU:\n{said[-3000:]}")
            if not any(taken in said for taken in PORT_TAKEN) or attempt == 2:
                pytest.fail(f"phoenix serve exited with {proc.returncode}:\n{said[-3000:]}")
        finally:
            stop(proc, timeout=15)


def otel_kernel(tmp: Path, **otel: str) -> Kernel:
    """A kernel whose environment has these OTEL_* variables and no others."""
    env = {k: v for k, v in kernel_env(tmp).items() if not k.startswith(OTEL_PREFIXES)}
    return Kernel(tmp, {**env, **otel})


def script(kernel: Kernel, name: str, data: Any) -> str:
    kernel.ok(f"import json, pathlib\npathlib.Path({name + '.json'!r}).write_text(json.dumps({data!r}))")
    return f"scripted:{name}.json"


def flush(kernel: Kernel) -> Any:
    """Export the ended turns' spans now (they otherwise go every few seconds); the cell's execution."""
    return kernel.ok("from synapse_nb.notebook.extension import get_state\n"
                     "print(get_state(get_ipython()).flush_tracing())")


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    """Phoenix's OTLP JSON attributes as plain values."""
    out: dict[str, Any] = {}
    for item in span.get("attributes") or []:
        value = item["value"]
        out[item["key"]] = next((v for k, v in value.items() if k.endswith("_value") and v is not None), None)
    return out


def test_a_turn_with_two_tool_calls_reads_back_from_phoenix(phoenix: str, tmp_path: Path) -> None:
    kernel = otel_kernel(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=phoenix, OTEL_SERVICE_NAME="synapse-e2e")
    try:
        load = kernel.ok("%load_ext synapse_nb")
        assert load.stderr == ""
        kernel.ok(f"import sys\n%mcp connect meta --env OTEL_EXPORTER_OTLP_ENDPOINT={phoenix} "
                  f"-- {{sys.executable}} {META_SERVER}")
        model = script(kernel, "otel", [
            {"tool_calls": [{"name": "meta__meta", "arguments": {}}, {"name": "meta__count", "arguments": {"n": 3}}]},
            "Counted.",
        ])
        run = kernel.ok(f"%%synapse --model {model}\n{PROMPT}")
        assert run.stderr == ""
        assert "Counted." in run.text()
        facts = json.loads(kernel.ok(
            "import json\n_calls = _synapse.tool_calls\n"
            "print(json.dumps({'session': _synapse.session_id, 'ids': dict(zip(_calls.tool, _calls.tool_call_id)),"
            " 'texts': dict(zip(_calls.tool, _calls.result_text))}))"
        ).stdout)
        assert flush(kernel).stdout.strip() == "True"
    finally:
        kernel.close()

    seen = json.loads(facts["texts"]["meta"])
    version, trace_id, client_span_id, _flags = seen["traceparent"].split("-")
    assert version == "00"

    def trace_complete() -> list[dict[str, Any]] | None:
        spans: list[dict[str, Any]] = get_json(
            f"{phoenix}/v1/projects/default/spans/otlpv1?trace_id={trace_id}&limit=100")["data"]
        names = sorted("chat" if s["name"].startswith("chat ") else s["name"] for s in spans)
        # each tools/call twice: the kernel's MCP client span and the traced server's own span under it
        want = ["chat", "chat", "execute_tool count", "execute_tool meta", "invoke_agent synapse_nb",
                "tools/call count", "tools/call count", "tools/call meta", "tools/call meta"]
        return spans if names == want else None

    spans = wait_for(trace_complete, 60, f"trace {trace_id} complete in Phoenix")
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault("chat" if span["name"].startswith("chat ") else span["name"], []).append(span)
    [turn] = by_name["invoke_agent synapse_nb"]
    assert turn["parent_span_id"] in (None, "")
    assert attributes(turn).items() >= {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "scripted",
        "synapse.session_id": facts["session"],
        "gen_ai.conversation.id": facts["session"], "synapse.status": "finished",
    }.items()
    assert int(attributes(turn)["gen_ai.usage.input_tokens"]) > 0

    chats = by_name["chat"]
    assert len(chats) == 2
    for chat in chats:
        assert chat["parent_span_id"] == turn["span_id"]
        a = attributes(chat)
        assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"]) == ("chat", "scripted")
        assert chat["name"] == f"chat {a['gen_ai.request.model']}"
        assert a["gen_ai.request.model"] == attributes(turn)["gen_ai.request.model"]
        assert int(a["gen_ai.usage.output_tokens"]) > 0

    for tool in ("meta", "count"):
        [span] = by_name[f"execute_tool {tool}"]
        assert span["parent_span_id"] == turn["span_id"]
        assert attributes(span).items() >= {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": facts["ids"][tool], "synapse.server": "meta", "synapse.approval": "auto",
        }.items()
        # the MCP client span of the request (OpenTelemetry MCP conventions) under the tool call, and the
        # traced server's own span under it: the client span's context travelled in the request's _meta
        [client] = [s for s in by_name[f"tools/call {tool}"] if s["parent_span_id"] == span["span_id"]]
        assert attributes(client).items() >= {
            "mcp.method.name": "tools/call", "gen_ai.tool.name": tool, "mcp.protocol.version": "2026-07-28",
            "network.transport": "pipe",
        }.items()
        assert str(attributes(client)["jsonrpc.request.id"]).isdigit()
        [server_span] = [s for s in by_name[f"tools/call {tool}"] if s is not client]
        assert server_span["parent_span_id"] == client["span_id"]
        assert attributes(server_span)["gen_ai.tool.name"] == tool
    meta_tool = by_name["execute_tool meta"][0]["span_id"]
    [meta_client] = [s for s in by_name["tools/call meta"] if s["parent_span_id"] == meta_tool]
    assert meta_client["span_id"] == client_span_id

    first_chat, second_chat = sorted(chats, key=lambda s: int(s["start_time_unix_nano"]))
    tools = [by_name["execute_tool meta"][0], by_name["execute_tool count"][0]]
    assert int(first_chat["end_time_unix_nano"]) <= min(int(t["start_time_unix_nano"]) for t in tools)
    assert max(int(t["end_time_unix_nano"]) for t in tools) <= int(second_chat["start_time_unix_nano"])
    assert PROMPT not in json.dumps(spans)  # content is off by default


def test_an_unreachable_collector_is_said_once_and_every_cell_works(tmp_path: Path) -> None:
    with refusing_port() as port:  # a collector that is down
        kernel = otel_kernel(
            tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
            OTEL_BSP_SCHEDULE_DELAY="3600000",  # exports only when flushed, so the test knows which cell says it
            OTEL_EXPORTER_OTLP_TIMEOUT="2",
        )
        try:
            cells = [kernel.ok("%load_ext synapse_nb\nimport synapse_nb\n\n@synapse_nb.tool\n"
                               "def count(n: int) -> str:\n    \"\"\"Count to n.\"\"\"\n"
                               "    return ' '.join(str(i) for i in range(1, n + 1))")]
            replies = [{"tool_calls": [{"name": "count", "arguments": {"n": 3}}]}, "Counted {result}."]
            turn = kernel.ok(f"%%synapse --model {script(kernel, 'count', replies)}\nCount to three")
            assert "Counted 1 2 3." in turn.text()
            first_flush = flush(kernel)
            again = kernel.ok(
                f"%%synapse --session other --model {script(kernel, 'again', replies)}\nCount to three again"
            )
            assert "Counted 1 2 3." in again.text()
            second_flush = flush(kernel)
            off = kernel.ok("%config SynapseMagics.otel = False")  # off whatever the variables say
            untraced = kernel.ok(f"%%synapse --session third --model {script(kernel, 'third', replies)}\nOnce more")
            assert "Counted 1 2 3." in untraced.text()
            assert flush(kernel).stdout.strip() == "False"
            unload = kernel.ok("%unload_ext synapse_nb")
            cells += [turn, first_flush, again, second_flush, off, untraced, unload]
        finally:
            kernel.close()
        warnings = [line for cell in cells for line in cell.stderr.splitlines() if line.strip()]
        assert len(warnings) == 1, warnings
        assert warnings[0] in first_flush.stderr
        assert f"could not export spans to http://127.0.0.1:{port}/v1/traces" in warnings[0]
        assert "Connection refused" in warnings[0]
        assert "pip install" not in warnings[0]


def test_asking_for_tracing_without_the_extra_says_one_line(tmp_path: Path) -> None:
    kernel = otel_kernel(tmp_path)
    try:
        # as if opentelemetry-sdk were not installed (a kernel that never imported it)
        kernel.ok("import sys\nsys.modules['opentelemetry.sdk'] = None\n%load_ext synapse_nb")
        asked = kernel.ok("%config SynapseMagics.otel = True")
        turn = kernel.ok("%%synapse\nWhich tables are there?")
        assert "scripted:demo" in turn.text()
    finally:
        kernel.close()
    assert asked.stderr.strip() == "OpenTelemetry tracing needs the otel extra: pip install 'synapse_nb[otel]'"
    assert turn.stderr == ""
