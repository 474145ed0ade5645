"""Row 18: an MCP tool call through synapse_nb against its peers, in the same run on the same server.

The demo server's `echo` over stdio, sequential calls, seconds per call:
- the floor: the bare `mcp` SDK (`mcp.Client.call_tool`, an open session);
- synapse_nb: `McpHub.call` (the hub's layer over the same SDK);
- langchain-mcp-adapters (in its own venv, .tools/bench-peers/langchain-mcp, installed by `make bench-tools`):
  its best use, an explicit session (`client.session` + `load_mcp_tools`), and its default use (a
  MultiServerMCPClient tool, which starts a session, and so the server, for every call).
Targets: within 1.05x of the bare SDK (issue 37; 1.1x before), and faster than langchain-mcp-adapters' best use.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from _common import DEMO_ARGS, REPO, Measure, Row, Size, ainterleaved, fmt_seconds, median, paired_ratio, run_async

from synapse_nb.mcp_client.hub import McpHub

__all__ = ["row_peers"]

PEER = REPO / ".tools" / "bench-peers" / "langchain-mcp" / "bin" / "python"
ARGS = {"text": "hello from the benchmark"}


SERVERS = 3  # server processes per side


class _Peer:
    """langchain-mcp-adapters in its own venv and process (bench/peer_langchain.py), timing blocks of calls on
    request, so that its blocks alternate with ours in time."""

    def __init__(self, default_calls: int) -> None:
        if not PEER.exists():
            raise RuntimeError(
                f"langchain-mcp-adapters is not installed at {PEER.parent.parent}: run `make bench-tools`"
            )
        script = Path(__file__).with_name("peer_langchain.py")
        command = [str(PEER), str(script), str(default_calls), str(SERVERS), sys.executable, *DEMO_ARGS]
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                      env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
        self.default = float(json.loads(self._line())["default"])
        if self._line() != "ready":
            raise RuntimeError("the langchain-mcp-adapters peer did not open its sessions")

    def _line(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the langchain-mcp-adapters peer ended (exit status {self._proc.wait(timeout=30)})")
        return line.strip()

    def block(self, calls: int) -> float:
        """Seconds per call of `calls` calls, as the peer timed them."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{calls}\n")
        self._proc.stdin.flush()
        return float(json.loads(self._line()))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()  # an empty line: the peer closes its sessions and ends
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


async def _measure(rounds: int, block: int, peer: _Peer) -> dict[str, list[float]]:
    """Seconds per call in each round, for the bare SDK, McpHub.call and the peer's explicit session.

    Each round times a block of calls on each side in turn, the order reversed every other round: a slowdown
    of the machine for a while falls on all of them. Each side calls SERVERS server processes in turn: one
    process can answer ~0.2 ms a call slower than another for as long as it lives (where the OS placed it),
    which alone moved a one-process-per-side ratio by ±0.05 from run to run."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=list(DEMO_ARGS))
    peer_s: list[float] = []
    async with McpHub() as hub, contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(params)) for _ in range(SERVERS)]
        names = [f"demo{n}" for n in range(SERVERS)]
        for name in names:
            await hub.connect(name, command=sys.executable, args=DEMO_ARGS)

        async def bare() -> None:
            for n in range(block):
                await clients[n % SERVERS].call_tool("echo", ARGS)

        async def ours() -> None:
            for n in range(block):
                await hub.call(f"{names[n % SERVERS]}__echo", ARGS)

        async def theirs() -> None:
            peer_s.append(peer.block(block))  # its own timing, without the request to it

        async def grab(client: Client) -> Client:
            return client

        # the hub's own SDK clients (its protocol options: the log level asked, the extensions declared), called
        # directly on the hub's own server processes: against them, McpHub.call's difference is our code alone
        owns = [await hub._request(name, grab, "benchmark") for name in names]

        async def own() -> None:
            for n in range(block):
                await owns[n % SERVERS].call_tool("echo", ARGS)

        s = await ainterleaved({"bare": bare, "hub": ours, "own": own, "peer": theirs}, rounds, warmup=2, per=block)
    return {"bare": s["bare"], "hub": s["hub"], "own": s["own"], "peer": peer_s[2:]}


def row_peers(size: Size) -> list[Row]:
    (rounds, block), default_calls = size.pick(((2, 6), 0), ((40, 21), 10))
    peer = _Peer(default_calls)
    try:
        s = run_async(_measure(rounds, block, peer))
    finally:
        peer.close()
    bare, ours, best, own = median(s["bare"]), median(s["hub"]), median(s["peer"]), median(s["own"])
    ratio, against_peer = paired_ratio(s["hub"], s["bare"]), paired_ratio(s["hub"], s["peer"])
    layer, options = paired_ratio(s["hub"], s["own"]), paired_ratio(s["own"], s["bare"])
    ok = ratio <= 1.05 and against_peer < 1
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return [
        Row("18a", "MCP tool call: McpHub.call vs the bare SDK", Measure("mcp.Client.call_tool", bare),
            Measure("McpHub.call", ours), "≤ 1.05x", ratio <= 1.05, ratio=ratio,
            note=f"the demo server's echo over stdio ({SERVERS} server processes per side, called in turn), "
                 f"{rounds} rounds of {block} sequential calls per side, the sides in turn; per call, the median "
                 f"of the rounds' paired ratios (the ratio of the two medians: {ours / bare:.2f}x); load average "
                 f"{load} at the end (2 cores)",
            why="" if ratio <= 1.05 else
                f"split between the hub's protocol options and its code: its SDK client, called directly, "
                f"costs {options:.2f}x the bare SDK's on 2026-07-28 connections, where every request carries the log "
                f"level the hub asks for (servers log only when asked, issue 38) and the three extensions it "
                f"declares (MCP Apps, tasks, skills); McpHub.call costs {layer:.2f}x that client (row 18c)"),
        Row("18c", "MCP tool call: McpHub.call vs the hub's own SDK client (our code alone)",
            Measure("the hub's mcp.Client, called directly", own), Measure("McpHub.call", ours),
            "≤ 1.05x", layer <= 1.05, ratio=layer,
            note=f"the same servers and rounds as 18a: the hub's own client (its log level and extensions) called "
                 f"directly on the hub's own server processes, so what differs is the hub's code per call (the "
                 f"tool's lookup, the request and its deadline, the result's conversion); that client against the "
                 f"bare SDK: {options:.2f}x",
            why="" if layer <= 1.05 else "the hub's own code per call: profile `McpHub.call` with this row"),
        Row("18b", "MCP tool call: McpHub.call vs langchain-mcp-adapters' best use",
            Measure("langchain-mcp-adapters, explicit session", best), Measure("McpHub.call", ours),
            "faster (< 1x)", against_peer < 1, ratio=against_peer,
            note=f"langchain-mcp-adapters in its own venv and process, its blocks of calls in turn with ours (the "
                 f"same rounds as 18a, its own {SERVERS} server processes); the median of the rounds' paired "
                 f"ratios (the ratio of the two medians: {ours / best:.2f}x); its default use (MultiServerMCPClient "
                 f"tool: a new session and server per call) took {fmt_seconds(peer.default)} per call (median of "
                 f"{default_calls})",
            why="" if ok else
                "langchain-mcp-adapters' explicit session is a thin layer over the SDK's ClientSession: against "
                "it the hub's own code per call decides (see 18a)"),
    ]
