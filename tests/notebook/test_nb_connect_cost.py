"""`%mcp connect` says what the wait was spent on: the connection's own time, and apart from it the one-time
import of the MCP client (the first connect in a kernel), so that the server is not blamed for it."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.notebook.commands import mcp as mcp_cmd
from tests.support import tools_server

pytestmark = pytest.mark.process

LOADING = re.compile(r" \(\+[\d.]+ m?s loading the MCP client, first time only\)$")


def final_line(ip: Any) -> str:
    text: str = ip.published.final[-1]["text/plain"]
    return text


def test_the_one_time_load_is_named_apart_from_the_connection(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake wall clock (2.5 s in all) and a fake load (1.2 s of it) make the split visible whatever the machine.
    ticks = iter([100.0, 102.5])
    monkeypatch.setattr(mcp_cmd, "clock", lambda: next(ticks))

    real = mcp_cmd._load_client

    async def loading() -> float:
        await real()  # the real wait (over at once when the client is loaded), then the fake figure
        return 1200.0

    monkeypatch.setattr(mcp_cmd, "_load_client", loading)
    ip.run("import sys")
    ip.line("mcp", f"connect demo -- {tools_server.COMMAND}")
    assert re.fullmatch(r"✓ demo: connected, \d+ tools \(stdio, pid \d+\) in 1\.3 s "
                        r"\(\+1\.2 s loading the MCP client, first time only\)", final_line(ip))


FRESH = textwrap.dedent("""
    import sys
    import threading
    import synapse_nb.mcp_client as client
    from IPython.core.interactiveshell import InteractiveShell
    # The import %load_ext starts in the background is held until the first connect waits for it: with warm
    # bytecode on an idle machine it could otherwise be over before that connect, which then has no wait to name.
    joined = threading.Event()
    real_import = client._import_all
    def held_import():
        joined.wait(600)  # bounded: a connect that never waits fails the test on its first line instead
        real_import()
    client._import_all = held_import
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "synapse_nb")  # starts the MCP client's import in the background
    preloading = client.preload()
    assert preloading.is_alive()
    def join(timeout=None):
        joined.set()  # the first connect waits for the import now: let it run
        threading.Thread.join(preloading, timeout)
    preloading.join = join
    from synapse_nb.notebook.extension import get_state
    state = get_state(ip)
    lines = []
    state.port.publish = lambda bundle, display_id, update: lines.append(bundle.get("text/plain", ""))
    command = " ".join([sys.executable, *sys.argv[1:]])
    for name in ("first", "second"):
        ip.run_line_magic("mcp", f"connect {name} -- {command}")
        print(lines[-1])
    ip.run_line_magic("unload_ext", "synapse_nb")
""")


def test_in_a_fresh_process_only_the_first_connect_names_the_load(tmp_path: Path) -> None:
    # Connecting right after %load_ext: the import started there is still under way (it takes seconds of CPU; held
    # here until the connect waits for it), so the first connect waits for it and says so; the second finds
    # everything loaded and says nothing of it.
    out = subprocess.run(
        [sys.executable, "-c", FRESH, *tools_server.ARGS], capture_output=True, text=True, timeout=180,
        cwd=tmp_path, env={"PATH": "", "HOME": str(tmp_path), "SYNAPSE_DB": str(tmp_path / "h.duckdb"),
                           "PYTHONPATH": str(Path(tools_server.__file__).parent)},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    first, second = out.stdout.strip().splitlines()[-2:]
    assert first.startswith("✓ first: connected")
    assert LOADING.search(first), first
    assert second.startswith("✓ second: connected")
    assert "loading the MCP client" not in second
