"""What a user of real servers sees: the folders a server is offered (roots), a running server's stderr, the
lines of a stop that takes a while (issue 21, defects 2, 5 and 8)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.npm_servers import FILESYSTEM, node_for


def _allowed(ip: Any, name: str, folder: Path) -> str:
    """The server's allowed folders once they name `folder` (it fetches its roots after the handshake, on its
    own: each call is a round trip that gives it the time to)."""
    listed = ""
    for _ in range(50):
        listed = ip.line("mcp", f"call {name}.list_allowed_directories").text
        if str(folder) in listed:
            break
    return listed


@pytest.mark.node
def test_the_filesystem_server_keeps_the_folder_of_its_command_line(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "hello.txt").write_text("hello from data")
    ip.line("mcp", f"connect fs -- {node_for(FILESYSTEM)} {FILESYSTEM} {data}")
    read = ip.line("mcp", f"call fs.read_text_file path={data / 'hello.txt'}")
    assert not read.result.is_error, read.text
    assert read.text == "hello from data"
    assert ip.line("mcp", "list").loc[0, "roots"] == "none offered (its own folders)"
    capsys.readouterr()
    ip.line("mcp", "roots fs")
    assert capsys.readouterr().out.startswith("fs is offered no roots: it uses its own folders")

    # opting in (%mcp roots, or --roots / a config entry's "roots"): the server now sees those folders
    other = tmp_path / "other"
    other.mkdir()
    ip.line("mcp", f"roots fs {other}")
    assert str(other) in _allowed(ip, "fs", other)
    assert ip.line("mcp", "list").loc[0, "roots"] == str(other)
    assert "Access denied" in ip.line("mcp", f"call fs.read_text_file path={data / 'hello.txt'}").text


@pytest.mark.node
def test_roots_given_on_connect_are_offered(ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ip.line("mcp", f"connect fs --roots {tmp_path} -- {node_for(FILESYSTEM)} {FILESYSTEM}")  # no folder of its own
    assert str(tmp_path) in _allowed(ip, "fs", tmp_path)
    capsys.readouterr()
    ip.line("mcp", "roots fs")
    assert capsys.readouterr().out == f"roots of fs:\n  {tmp_path.resolve().as_uri()}\n"


# A stdio server that writes to stderr whenever its tool runs, long after it started; the line holds its token.
SAYER = (
    "import os, sys\n"
    "from mcp.server.mcpserver import MCPServer\n"
    "server = MCPServer('sayer')\n"
    "@server.tool()\n"
    "def say(text: str) -> str:\n"
    "    print(f'said {text} with token ' + os.environ['SAYER_TOKEN'], file=sys.stderr, flush=True)\n"
    "    return 'ok'\n"
    "server.run('stdio')\n"
)


@pytest.mark.process
def test_a_running_servers_stderr_is_shown_with_its_secrets_masked(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    token = "tok-" + "9f3c2a7b5e1d4c6a"
    script = tmp_path / "sayer.py"
    script.write_text(SAYER)
    ip.line("mcp", f"connect sayer --env SAYER_TOKEN={token} -- {sys.executable} {script}")
    for word in ("first", "second", "third"):
        assert ip.line("mcp", f"call sayer.say text={word}").text == "ok"

    async def third_line_read() -> None:  # stderr is read as it comes, not with the call's answer
        async with asyncio.timeout(30):
            while not any("said third" in line for line in ip.state.hub.stderr("sayer")):  # noqa: ASYNC110 (the ring has no event: polled under the deadline)
                await asyncio.sleep(0.01)

    ip.state.runner.run(third_line_read())
    capsys.readouterr()
    assert ip.line("mcp", "logs sayer --stderr -n 2") is None
    out = capsys.readouterr().out
    assert out.startswith("sayer stderr (last 2 lines):\nsaid second with token ")
    assert "said third with token " in out
    assert "said first" not in out
    assert token not in out
    assert token not in ip.state.hub.server("sayer").stderr_tail  # what the inspector's stderr view shows
    assert "said third" in ip.state.hub.server("sayer").stderr_tail


# A demo server that ignores SIGTERM and, once its input closes, lingers for a minute: only SIGKILL ends it soon.
STUBBORN = (
    "import atexit, signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "atexit.register(time.sleep, 60)\n"
    "from synapse_nb.mcp_client.demo_server import main\n"
    "main([])\n"
)


@pytest.mark.process
def test_stopping_a_server_that_ignores_eof_says_so_and_ends_it(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    from synapse_nb.mcp_client.process import ProcessRef

    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    ip.line("mcp", f"connect stubborn -- {sys.executable} {script}")
    pid = ip.state.hub.server("stubborn").pid
    assert pid is not None
    import psutil

    ref = ProcessRef(pid, psutil.Process(pid).create_time())
    ip.published.items.clear()
    capsys.readouterr()
    ip.line("mcp", "disconnect --all")
    shown = [b.get("text/plain", "") for b, _id, _live in ip.published.items]
    assert any(text.startswith("stopping stubborn … ") for text in shown), shown  # a sign of life meanwhile
    assert capsys.readouterr().out == "stubborn disconnected\n"
    assert not ref.alive()  # SIGTERM was ignored: it was killed before disconnect returned


@pytest.mark.process
def test_a_config_file_failure_is_reported_once_and_listings_have_no_none(
    ip: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    import json
    import logging
    import sys

    from tests.support import tools_server
    config = tmp_path / "servers.json"
    fails = "import sys; print('boom here', file=sys.stderr); sys.exit(3)"
    config.write_text(json.dumps({"mcpServers": {
        "bad": {"command": sys.executable, "args": ["-c", fails]},
        "demo": {"command": sys.executable, "args": list(tools_server.ARGS)},
    }}))
    with caplog.at_level(logging.INFO):
        ip.line("mcp", f"connect --config {config}")
    # the cell shows the report's row and the stderr section; nothing logs it a third time as a warning
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    shown = "\n".join(b.get("text/plain", "") for b, _id, _live in ip.published.items)
    assert shown.count("boom here") == 1
    assert shown.count("bad: ✗ failed: ") == 1
    frame = ip.line("mcp", "list").set_index("server")
    assert frame.loc["demo", "last_error"] == ""  # blank, never None or NaN
    assert frame.loc["bad", "last_error"].startswith("the server exited with status 3 during the handshake")
