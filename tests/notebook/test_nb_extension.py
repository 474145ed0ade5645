"""`%load_ext synapse_nb` is instant and quiet; `%unload_ext` closes everything it opened."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from IPython.core.error import UsageError

from synapse_nb.notebook.extension import get_state
from synapse_nb.notebook.magics import SynapseMagics

HEAVY = ("mcp", "httpx", "duckdb", "pandas", "ipywidgets", "nest_asyncio2", "pyarrow")


@pytest.mark.process
def test_load_is_quiet_and_imports_nothing_heavy(clean_env: Any) -> None:
    code = textwrap.dedent(
        f"""
        import json, sys, time
        from IPython.core.interactiveshell import InteractiveShell
        import synapse_nb.mcp_client as mc
        preloads = []
        mc.preload = lambda: preloads.append(1)  # its background SDK import: tests/mcp_client/test_warm_validation.py
        shell = InteractiveShell.instance()
        started = time.perf_counter()
        shell.run_line_magic("load_ext", "synapse_nb")
        took = time.perf_counter() - started
        print(json.dumps({{
            "seconds": took,
            "heavy": sorted(m for m in {HEAVY!r} if m in sys.modules),
            "preloads": len(preloads),
            "magics": sorted(n for n in ("synapse", "synapse_sql", "mcp")
                             if n in shell.magics_manager.magics["line"] or n in shell.magics_manager.magics["cell"]),
        }}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stderr == ""
    *noise, last = out.stdout.strip().splitlines()
    assert noise == []  # loading printed nothing
    report = json.loads(last)
    print(f"%load_ext synapse_nb took {report['seconds'] * 1000:.0f} ms in a fresh interpreter")
    assert report["heavy"] == []
    assert report["preloads"] == 1  # the SDK import was started, in the background
    assert report["magics"] == ["mcp", "synapse", "synapse_sql"]


def test_loading_twice_keeps_one_state_and_one_configurable(ip: Any) -> None:
    ip.line("load_ext", "synapse_nb")  # already loaded: IPython does nothing
    ip.shell.extension_manager.reload_extension("synapse_nb")
    state = get_state(ip.shell)
    assert state is not None
    assert sum(isinstance(c, SynapseMagics) for c in ip.shell.configurables) == 1


@pytest.mark.process
def test_unload_closes_servers_and_the_store_and_removes_the_magics(ip: Any) -> None:
    ip.run("import sys")
    ip.line("mcp", "connect demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server")
    ip.cell("synapse", "What tables are there?")
    state = ip.state
    hub, store = state.hub, state.store
    assert store.available
    ip.line("unload_ext", "synapse_nb")
    assert hub.servers == []
    assert not store.available
    assert get_state(ip.shell) is None
    assert "synapse" not in ip.shell.magics_manager.magics["cell"]
    assert not any(isinstance(c, SynapseMagics) for c in ip.shell.configurables)
    with pytest.raises(UsageError, match="not found"):
        ip.line("mcp", "list")
