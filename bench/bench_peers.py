"""Row 18: an MCP tool call through synapse_nb against its peers, in the same run on the same server.

The demo server's `echo` over stdio, sequential calls, median seconds per call:
- the floor: the bare `mcp` SDK (`mcp.Client.call_tool`, an open session);
- synapse_nb: `McpHub.call` (the hub's layer over the same SDK);
- langchain-mcp-adapters (in its own venv, .tools/bench-peers/langchain-mcp, installed by `make bench-tools`):
  its best use, an explicit session (`client.session` + `load_mcp_tools`), and its default use (a
  MultiServerMCPClient tool, which starts a session, and so the server, for every call).
Targets (issue 22): within 1.1x of the bare SDK, and faster than langchain-mcp-adapters' best use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import DEMO_ARGS, REPO, Measure, Row, Size, fmt_seconds, median, run_async

from synapse_nb.mcp_client.hub import McpHub

__all__ = ["row_peers"]

PEER = REPO / ".tools" / "bench-peers" / "langchain-mcp" / "bin" / "python"
ARGS = {"text": "hello from the benchmark"}


async def _ours(calls: int) -> tuple[float, float]:
    """(bare mcp.Client.call_tool, McpHub.call) seconds per call, alternating call by call."""
    from mcp import Client, StdioServerParameters

    bare: list[float] = []
    hub_s: list[float] = []
    params = StdioServerParameters(command=sys.executable, args=list(DEMO_ARGS))
    async with McpHub() as hub, Client(params) as client:
        await hub.connect("demo", command=sys.executable, args=DEMO_ARGS)
        for n in range(calls + 1):
            t0 = time.perf_counter()
            await client.call_tool("echo", ARGS)
            t1 = time.perf_counter()
            await hub.call("demo__echo", ARGS)
            t2 = time.perf_counter()
            if n:
                bare.append(t1 - t0)
                hub_s.append(t2 - t1)
    return median(bare), median(hub_s)


def _peer(calls: int, default_calls: int) -> dict[str, float]:
    if not PEER.exists():
        raise RuntimeError(f"langchain-mcp-adapters is not installed at {PEER.parent.parent}: run `make bench-tools`")
    script = Path(__file__).with_name("peer_langchain.py")
    command = [str(PEER), str(script), str(calls), str(default_calls), sys.executable, *DEMO_ARGS]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def row_peers(size: Size) -> list[Row]:
    calls, default_calls = size.pick((5, 0), (200, 10))
    bare, ours = run_async(_ours(calls))
    peer = _peer(calls, default_calls)
    best = peer["explicit"]
    ok = ours <= 1.1 * bare and ours < best
    return [
        Row("18a", "MCP tool call: McpHub.call vs the bare SDK", Measure("mcp.Client.call_tool", bare),
            Measure("McpHub.call", ours), "< 1.1x", ours <= 1.1 * bare,
            note=f"the demo server's echo over stdio, {calls} sequential calls alternating, median per call; "
                 f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end (2 cores)",
            why="" if ours <= 1.1 * bare else
                "the hub runs each request's SDK call in a worker task of its own (mcp_client/inflight.py "
                "Session.run), so that cancellation, the request's deadline and a nested loop reach the SDK only "
                "through that task; the hand-off costs about two event-loop iterations per call more than the bare "
                "SDK's (cProfile on an idle machine, 2026-11-27: 10.8 against 9.0 `_run_once` per call) while the "
                "hub's own code takes ~0.1 ms a call. Closing the gap means awaiting the SDK in the caller's task "
                "and giving that isolation up; on a loaded machine single calls also vary by more than this"),
        Row("18b", "MCP tool call: McpHub.call vs langchain-mcp-adapters' best use",
            Measure("langchain-mcp-adapters, explicit session", best), Measure("McpHub.call", ours),
            "faster (< 1x)", ours < best,
            note=f"langchain-mcp-adapters in its own venv and process; its default use (MultiServerMCPClient "
                 f"tool: a new session and server per call) took {fmt_seconds(peer['default'])} per call "
                 f"(median of {default_calls}); {calls} calls per side",
            why="" if ok else
                "on a machine this loaded (see the load average) single calls of ~1 ms vary by more than the "
                "layers differ; row 1 measures the hub against the bare SDK on one server process in 100 "
                "alternating blocks (the finer comparison); rerun with `--only 1,18`"),
    ]
