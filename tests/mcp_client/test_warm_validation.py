"""The SDK's heavy imports happen off the loop: `preload()` in a background thread (started by `%load_ext`),
jsonschema (result validation) only before a call that needs it, never in a thread racing a call."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[2]


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(REPO)], capture_output=True, text=True,
                         timeout=120, check=True)
    return out.stdout.split()


def test_connect_starts_no_import_thread_and_validation_loads_before_the_first_validated_call() -> None:
    assert _run(
        """
        import asyncio, sys, threading
        from synapse_nb.mcp_client.hub import McpHub
        sys.path.insert(0, sys.argv[1])  # the checkout, for the test server
        from tests.support.tools_server import build_server

        async def main():
            async with McpHub() as hub:
                # the transport does not matter here
                await hub.connect_in_process("demo", build_server())
                racing = [t.name for t in threading.enumerate() if "warm" in t.name or "preload" in t.name]
                print(len(racing), "jsonschema" in sys.modules)
                await hub.call("demo__echo", {"text": "no output schema"})
                print("jsonschema" in sys.modules)
                await hub.call("demo__cancellations", {})  # declares an output schema: the SDK validates it
                print("jsonschema" in sys.modules)

        asyncio.run(main())
        """
    ) == ["0", "False", "False", "True"]


def test_load_ext_starts_the_preload_a_daemon_thread_importing_the_sdk_once() -> None:
    assert _run(
        """
        import sys, threading
        from IPython.core.interactiveshell import InteractiveShell
        import synapse_nb.mcp_client as mc
        before = "mcp" in sys.modules
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "synapse_nb")
        started = mc._thread  # set by %load_ext's preload()
        print(before, started is not None and started is mc.preload() and started.daemon)
        started.join(60)
        print(all(m in sys.modules for m in mc.PRELOADED))
        print("jsonschema" in sys.modules)  # 2-3 s of CPU (a URI grammar) racing the first cells: left out
        """
    ) == ["False", "True", "True", "False"]
