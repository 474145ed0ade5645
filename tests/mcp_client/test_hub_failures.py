"""Servers that fail to start: a clear reason and stderr tail, a `failed` event and state; the others connect."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from pathlib import Path

import pytest

from synapse_nb.errors import ConfigError, ServerStartError
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.info import ServerInfo
from tests.mcp_client.mcp_helpers import Events, demo_stdio, gone
from tests.support.local_servers import refusing_port

pytestmark = pytest.mark.anyio

EXITS_AT_ONCE = "import sys; print('boom: no config found', file=sys.stderr); sys.exit(2)"
HANGS = "import os, sys, time; print('pid', os.getpid(), file=sys.stderr, flush=True); time.sleep(120)"
REFUSES = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" in msg:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "go away"}}),
              flush=True)
"""


async def _start_error(hub: McpHub, name: str, **kwargs: object) -> ServerStartError:
    with pytest.raises(ServerStartError) as info:
        await hub.connect(name, **kwargs)  # type: ignore[arg-type]
    return info.value


async def test_missing_command(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        err = await _start_error(hub, "ghost", command="no-such-mcp-server-anywhere")
        assert err.server == "ghost"
        assert "not found" in err.reason
        assert "no-such-mcp-server-anywhere" in str(err)
        assert hub.server("ghost").state == "failed"
        assert hub.server("ghost").last_error == err.reason
    assert events.names("ghost") == ["connecting", "failed", "disconnected"]  # the last one: the hub closed
    assert events.items[1].detail["reason"] == err.reason  # type: ignore[index]


@pytest.mark.process
async def test_server_that_exits_at_once_reports_its_stderr(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        err = await _start_error(hub, "quitter", command=sys.executable, args=["-c", EXITS_AT_ONCE])
        assert "the server exited with status 2 during the handshake" in err.reason
        assert "boom: no config found" in err.stderr_tail
        assert "boom: no config found" in str(err)
        info = hub.server("quitter")
        assert info.state == "failed"
        assert "boom" in info.stderr_tail
    assert events.names("quitter") == ["connecting", "failed", "disconnected"]
    assert "boom" in events.items[1].detail["stderr_tail"]  # type: ignore[index]


NODE_LIKE_EXIT = (
    "import sys; sys.stderr.write('Error: DATABASE_URL is not set\\n    at main (/srv/index.js:3:9)\\n"
    "    at node:internal/main:1:1\\n\\nNode.js v20.1.0\\n'); sys.exit(1)"
)


@pytest.mark.process
async def test_a_server_that_never_started_says_why_in_its_last_error_and_status() -> None:
    # last_error lacked the stderr line that says why, and a server stopped before it ever came up read as
    # "disconnected"
    async with McpHub() as hub:
        await _start_error(hub, "pg", command=sys.executable, args=["-c", NODE_LIKE_EXIT])
        info = hub.server("pg")
        assert info.last_error == ("the server exited with status 1 during the handshake "
                                   "(stderr: Error: DATABASE_URL is not set)")
    stopped = dataclasses.replace(info, state="stopped")  # e.g. its connect was interrupted: never came up
    assert stopped.status == f"failed to start: {info.last_error} — `%mcp restart pg` to retry"
    remote = ServerInfo("web", "http", "crashed", ever_connected=True)
    assert remote.status == "unreachable — the next tool call reconnects (or `%mcp restart web`)"


@pytest.mark.process
async def test_handshake_error() -> None:
    async with McpHub() as hub:
        err = await _start_error(hub, "rude", command=sys.executable, args=["-c", REFUSES])
        assert "handshake failed with error -32601: go away" in err.reason


@pytest.mark.process
async def test_connect_timeout_kills_the_server() -> None:
    async with McpHub() as hub:
        err = await _start_error(hub, "mute", command=sys.executable, args=["-c", HANGS], connect_timeout=1)
        assert "no answer to the handshake within 1 s" in err.reason
        pid = int(err.stderr_tail.split()[1])
        assert await gone(pid, 10)


async def test_unreachable_url() -> None:
    async with McpHub() as hub:
        with refusing_port() as port:
            err = await _start_error(hub, "nobody", url=f"http://127.0.0.1:{port}/mcp", connect_timeout=5)
        assert err.reason.startswith("cannot reach http://127.0.0.1:")
        assert hub.server("nobody").transport == "http"


async def test_invalid_arguments_and_missing_folder() -> None:
    async with McpHub() as hub:
        both = await _start_error(hub, "both", command="x", url="http://127.0.0.1:1/mcp")
        assert "either command (stdio) or url" in both.reason
        wrong = await _start_error(hub, "wrong", command="x", transport="http")
        assert "does not fit" in wrong.reason
        text_args = await _start_error(hub, "text", command="x", args="-m demo")
        assert "args must be a list of strings" in text_args.reason
        approve = await _start_error(hub, "approve", command="x", approve={"*": "maybe"})
        assert "approve must be" in approve.reason
        folder = await _start_error(hub, "folder", **demo_stdio(), cwd="/no/such/folder")
        assert "working directory" in folder.reason
        assert {s.state for s in hub.servers} == {"failed"}


@pytest.mark.process
async def test_connect_config_connects_all_at_once_and_reports_each_failure(
    clean_env: Path, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = demo_stdio()
    config = {"mcpServers": {
        "one": demo, "two": demo, "three": demo,
        "ghost": {"command": "no-such-mcp-server-anywhere"},
        "quitter": {"command": sys.executable, "args": ["-c", EXITS_AT_ONCE]},
        "unset": {"command": sys.executable, "env": {"K": "${env:SYNAPSE_TEST_UNSET_VAR}"}},
        "off": {**demo, "disabled": True},
    }}
    path = clean_env / "servers.json"
    path.write_text(json.dumps(config))
    monkeypatch.setenv("SYNAPSE_MCP_CONFIG", str(path))
    async with McpHub(on_event=events) as hub:
        results = await hub.connect_config()
        assert set(results) == {"one", "two", "three", "ghost", "quitter", "unset"}
        good = [results[n] for n in ("one", "two", "three")]
        assert all(isinstance(r, ServerInfo) and r.state == "connected" for r in good)
        for name, fragment in (("ghost", "not found"), ("quitter", "handshake"), ("unset", "SYNAPSE_TEST_UNSET_VAR")):
            err = results[name]
            assert isinstance(err, ServerStartError), name
            assert fragment in err.reason
        assert {s.name: s.state for s in hub.servers} == {
            "one": "connected", "two": "connected", "three": "connected",
            "ghost": "failed", "quitter": "failed", "unset": "failed",
        }
        assert {t.server for t in hub.tools} == {"one", "two", "three"}
        # the three starts overlapped in time: each began before any of them had finished
        spans = [(r.connected_at - dt.timedelta(milliseconds=r.connect_ms or 0), r.connected_at)
                 for r in good if isinstance(r, ServerInfo) and r.connected_at is not None]
        assert len(spans) == 3
        assert max(s for s, _ in spans) < min(e for _, e in spans)
        # connecting the same file again keeps the servers that are already up
        pids = {s.name: s.pid for s in hub.servers if s.state == "connected"}
        again = await hub.connect_config(path)
        assert {n: r.pid for n, r in again.items() if isinstance(r, ServerInfo)} == pids
    assert sorted(e.server for e in events.items if e.event == "failed") == ["ghost", "ghost", "quitter", "quitter",
                                                                             "unset", "unset"]


async def test_malformed_config_raises_config_error(clean_env: Path) -> None:
    path = clean_env / "servers.json"
    path.write_text('{"mcpServers": {"a": {"command": "x"}')
    async with McpHub() as hub:
        with pytest.raises(ConfigError) as info:
            await hub.connect_config(path)
        assert info.value.line == 1
        assert hub.servers == []
