"""Shutdown: bounded (close, then kill), and no server process outlives the hub or the Python process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from synapse_nb.errors import McpError
from synapse_nb.mcp_client import connection
from synapse_nb.mcp_client.hub import McpHub
from tests.mcp_client.mcp_helpers import DEMO_ARGS, Events, demo_stdio, gone, is_gone, wait_gone, wait_until

# A demo server that ignores SIGTERM and, once its stdin closes, lingers for a minute before exiting.
STUBBORN = textwrap.dedent("""
    import atexit, signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    atexit.register(time.sleep, 60)
    from synapse_nb.mcp_client.demo_server import main
    main([])
""")

# Connects a server (argv[2:]), prints its pid, then leaves without closing the hub.
LEAVER = textwrap.dedent("""
    import asyncio, os, sys
    from synapse_nb.mcp_client.hub import McpHub

    async def main():
        hub = McpHub()
        info = await hub.connect("demo", command=sys.executable, args=sys.argv[2:])
        print(info.pid, flush=True)
        if sys.argv[1] == "hard":
            os._exit(0)  # no atexit, no cleanup at all: the server must notice its stdin closing

    loop = asyncio.new_event_loop()
    loop.run_until_complete(main())
    # "soft": the loop stays open and the hub unclosed; only the interpreter's exit remains
""")


@pytest.mark.process
@pytest.mark.anyio
async def test_aclose_leaves_no_server_process(events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        a = await hub.connect("a", **demo_stdio())  # type: ignore[arg-type]
        b = await hub.connect("b", **demo_stdio())  # type: ignore[arg-type]
    assert a.pid is not None
    assert b.pid is not None
    assert await gone(a.pid, 1)
    assert await gone(b.pid, 1)
    assert hub.servers == []
    assert sorted(events.names()) == ["connected", "connected", "connecting", "connecting", "disconnected",
                                      "disconnected"]


@pytest.mark.process
@pytest.mark.anyio
async def test_a_server_that_will_not_stop_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "STOP_TIMEOUT", 0.5)
    async with McpHub() as hub:
        info = await hub.connect("stubborn", command=sys.executable, args=["-c", STUBBORN])
        assert info.pid is not None
        await hub.disconnect("stubborn")
        assert await gone(info.pid, 1)


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.anyio
async def test_default_shutdown_of_a_stubborn_server_is_bounded() -> None:
    async with McpHub() as hub:
        info = await hub.connect("stubborn", command=sys.executable, args=["-c", STUBBORN])
        assert info.pid is not None
    assert await gone(info.pid, 1)


@pytest.mark.process
@pytest.mark.parametrize(
    ("mode", "server"),
    [
        ("soft", ["-c", STUBBORN]),  # the interpreter exits normally: the hub's atexit hook kills the server
        ("hard", list(DEMO_ARGS)),  # os._exit: the server sees its stdin close and exits
    ],
)
def test_no_orphan_when_the_python_process_exits_without_closing(mode: str, server: list[str]) -> None:
    out = subprocess.run([sys.executable, "-c", LEAVER, mode, *server], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    assert wait_gone(pid, 10), f"server {pid} outlived its parent ({mode})"


@pytest.mark.process
@pytest.mark.anyio
async def test_cancelling_a_connect_stops_the_server(events: Events) -> None:
    import asyncio

    hangs = "import os, sys, time; print('pid', os.getpid(), file=sys.stderr, flush=True); time.sleep(120)"
    async with McpHub(on_event=events) as hub:
        connecting = asyncio.ensure_future(hub.connect("slow", command=sys.executable, args=["-c", hangs]))
        await wait_until(lambda: "pid" in _tail(hub, "slow"), what="the server to start")
        pid = int(_tail(hub, "slow").split()[1])
        connecting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await connecting
        assert hub.server("slow").state == "stopped"
        assert await gone(pid, 10)
        # the stop task reaps the process and then clears "stopping": on a busy machine a moment after it is gone
        await wait_until(lambda: not hub.server("slow").closing, what="the hub to see the server stopped")
        with pytest.raises(McpError, match="is disconnected"):
            await hub.list_prompts("slow")



def _tail(hub: McpHub, name: str) -> str:
    try:
        return hub.server(name).stderr_tail
    except McpError:
        return ""


# A server that starts slowly (it never answers the handshake) and ignores both the end of its input and
# SIGTERM: only SIGKILL ends it. It says its pid on stderr once it runs.
SLOW_AND_STUBBORN = (
    "import os, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('pid', os.getpid(), file=sys.stderr, flush=True); time.sleep(120)"
)

# Starts connecting the server above, cancels the connect once it runs (a Ctrl-C), prints its pid and leaves
# the interpreter with the hub unclosed and the loop open: only the hub's exit hook can end the server.
CANCEL_THEN_LEAVE = textwrap.dedent("""
    import asyncio, sys
    from synapse_nb.mcp_client.hub import McpHub

    async def main():
        hub = McpHub()
        connecting = asyncio.ensure_future(hub.connect("slow", command=sys.executable, args=sys.argv[1:]))
        async with asyncio.timeout(30):
            while not hub.servers or "pid" not in hub.servers[0].stderr_tail:
                await asyncio.sleep(0.02)
        connecting.cancel()
        await asyncio.gather(connecting, return_exceptions=True)
        print(hub.servers[0].stderr_tail.split()[1], flush=True)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(main())
""")


@pytest.mark.process
@pytest.mark.anyio
async def test_a_cancelled_connect_is_listed_as_stopping_and_disconnect_ends_it() -> None:
    import asyncio

    async with McpHub() as hub:
        connecting = asyncio.ensure_future(hub.connect("slow", command=sys.executable, args=["-c", SLOW_AND_STUBBORN]))
        await wait_until(lambda: "pid" in _tail(hub, "slow"), what="the server to start")
        pid = int(_tail(hub, "slow").split()[1])
        connecting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await connecting
        info = hub.server("slow")
        assert (info.state, info.closing, info.pid) == ("stopped", True, pid)  # still ending: %mcp list says so
        assert info.status.startswith(f"stopping pid {pid}")
        await hub.disconnect("slow")
        assert is_gone(pid)  # disconnect returned once the process was gone, not before
        assert hub.servers == []


@pytest.mark.process
def test_no_orphan_when_the_interpreter_exits_after_a_cancelled_connect() -> None:
    out = subprocess.run([sys.executable, "-c", CANCEL_THEN_LEAVE, "-c", SLOW_AND_STUBBORN],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    assert wait_gone(pid, 10), f"server {pid} of a cancelled connect outlived its parent"
