"""The hub driven the way the notebook runner does for magics called from code: nest_asyncio2's re-entrant
run_until_complete from inside the running loop, across several "cells". In a subprocess, because nest_asyncio2
patches asyncio globally."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.support import tools_server

pytestmark = pytest.mark.process

SCRIPT = textwrap.dedent("""
    import asyncio, sys, time
    import nest_asyncio2
    from synapse_nb.errors import ToolCallTimeout
    from synapse_nb.mcp_client.hub import McpHub

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    nest_asyncio2.apply(loop)
    hub = McpHub()

    def run(coro):  # a synchronous magic driving a coroutine while the kernel's loop is running
        return loop.run_until_complete(coro)

    def wait_for_stderr(text):
        deadline = time.monotonic() + 10
        while text not in hub.server("demo").stderr_tail:
            assert time.monotonic() < deadline, text
            run(asyncio.sleep(0.02))

    async def cell_1():
        args = sys.argv[1:]  # the test server's script (tests/support/tools_server.py)
        info = run(hub.connect("demo", command=sys.executable, args=args))
        print("connected", info.state)

    async def cell_2():
        print("echo", run(hub.call("demo__echo", {"text": "nested"})).text)
        try:
            run(hub.call("demo__sleep", {"seconds": 30}, timeout=0.3))
        except ToolCallTimeout:
            print("timeout ok")
        wait_for_stderr("sleep cancelled")
        task = loop.create_task(hub.call("demo__sleep", {"seconds": 31}))
        wait_for_stderr("sleep started (31 s)")
        task.cancel()
        try:
            run(task)
        except asyncio.CancelledError:
            print("cancelled ok")
        wait_for_stderr("sleep cancelled after")
        print("count", run(hub.call("demo__cancellations", {})).structured_content["result"])

    async def cell_3():
        print("echo", run(hub.call("demo__echo", {"text": "later cell"})).text)
        run(hub.aclose())
        print("closed", hub.servers)

    for cell in (cell_1, cell_2, cell_3):
        loop.run_until_complete(cell())
""")


def test_hub_under_nest_asyncio2_reentrancy() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, *tools_server.ARGS], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    expected = ["connected connected", "echo nested", "timeout ok", "cancelled ok", "count 2", "echo later cell",
                "closed []", ""]
    assert out.stdout.split("\n") == expected, out.stdout + out.stderr
