"""Row 20: the first `%mcp connect` in a real kernel, and a reconnect, against the bare SDK in the same run.

The four reference servers of row 11 (filesystem, memory: npm; time, git: PyPI), from one config file.
A jupyter_client frontend (this process, ZMQ over IPC) starts a fresh kernel of this interpreter, runs
`%load_ext synapse_nb`, then at once (as Run All does) `%mcp connect --config PATH`: 20a times that cell
from the execute request until the kernel's idle message. `%mcp disconnect --all` and the same connect
again in the same kernel give 20b (the SDK and the hub long imported). The cell's line says how much of the
first wait went to loading the MCP client (preload()'s import, which %load_ext started); the note keeps it.

Baselines, alternating round by round with the kernels: for 20a a fresh interpreter that imports the SDK
and connects the four with bare `mcp.Client` (handshake and tools/list each, gathered): what a first
connect costs without us; for 20b the bare SDK in this warm process (row 11's).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from _common import Measure, Row, Size, bench_dir, fmt_seconds, median, run_async
from bench_connect import _bare_four, _reference_servers
from bench_frontend import STRIPPED, Frontend

__all__ = ["row_first_connect"]

LOADING = re.compile(r"\(\+([\d.]+) (ms|s) loading the MCP client, first time only\)")

_BARE_COLD = r"""
import asyncio, json, sys, time
t0 = time.perf_counter()
from mcp import Client, StdioServerParameters

async def main():
    servers = json.loads(open(sys.argv[1]).read())["mcpServers"]
    # connected and listed once every handshake is done: the clients close after the clock stops
    counts = []
    stop = asyncio.Event()
    done = asyncio.Event()
    async def hold(entry):
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env"))
        async with Client(params, cache=None) as client:
            counts.append(len((await client.list_tools()).tools))
            if len(counts) == len(servers):
                done.set()
            await stop.wait()
    tasks = [asyncio.ensure_future(hold(e)) for e in servers.values()]
    await asyncio.wait_for(done.wait(), 120)
    elapsed = time.perf_counter() - t0
    stop.set()
    await asyncio.gather(*tasks)
    print(json.dumps({"seconds": elapsed, "tools": sum(counts)}))

asyncio.run(main())
"""


def _bare_cold(config: Path) -> float:
    out = subprocess.run([sys.executable, "-c", _BARE_COLD, str(config)], capture_output=True, text=True,
                         timeout=300, check=True)
    return float(json.loads(out.stdout)["seconds"])


def _loading_seconds(text: str) -> float:
    found = LOADING.search(text)
    if found is None:
        return 0.0
    value = float(found.group(1))
    return value / 1000 if found.group(2) == "ms" else value


def _kernel_round(work: Path, config: Path) -> tuple[float, float, float]:
    """One fresh kernel: (first connect s, its one-time load s as the line said, reconnect s)."""
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    env["SYNAPSE_DB"] = str(work / "history.duckdb")
    kernel = Frontend(work, env)
    try:
        kernel.run("%load_ext synapse_nb")
        first = kernel.run(f"%mcp connect --config {config}")
        said = "\n".join(text for _, text in first.shown)
        if "failed" in said:
            raise RuntimeError(f"a reference server did not connect: {said[-800:]}")
        kernel.run("%mcp disconnect --all")
        again = kernel.run(f"%mcp connect --config {config}")
        return first.idle - first.sent, _loading_seconds(said), again.idle - again.sent
    finally:
        kernel.close()


def row_first_connect(size: Size) -> list[Row]:
    name_a = "first `%mcp connect` of the four reference servers in a fresh kernel, right after %load_ext"
    name_b = "`%mcp connect` of the four again in the same kernel (after `%mcp disconnect --all`)"
    scratch = bench_dir() / "first_connect"
    scratch.mkdir(parents=True, exist_ok=True)
    servers = _reference_servers(scratch)
    if isinstance(servers, str):
        missing = Measure("not installed", float("nan"))
        return [Row("20a", name_a, None, missing, "< 1.3x", None, note=servers),
                Row("20b", name_b, None, missing, "< 1.3x", None, note=servers)]
    config = scratch / "mcp_servers.json"
    config.write_text(json.dumps({"mcpServers": servers}, indent=2))
    rounds = size.pick(1, 3)
    load_before = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    cold: list[float] = []
    warm: list[float] = []
    firsts: list[float] = []
    loads: list[float] = []
    agains: list[float] = []
    for i in range(rounds):
        cold.append(_bare_cold(config))
        first, loading, again = _kernel_round(scratch / f"kernel{i}", config)
        firsts.append(first)
        loads.append(loading)
        agains.append(again)
        warm.append(run_async(_bare_four(servers)))
    load_after = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    base_a, first_s, base_b, again_s = median(cold), median(firsts), median(warm), median(agains)
    ok_a, ok_b = first_s < 1.3 * base_a, again_s < 1.3 * base_b
    where = (f"jupyter_client over ZMQ (IPC) against a fresh kernel of this interpreter per round, cell times from "
             f"execute request to idle; load average {load_before} before, {load_after} after (1, 5, 15 min, "
             f"2 cores); median of {rounds}")
    return [
        Row("20a", name_a, Measure("bare mcp.Client, fresh interpreter: import + connect the four", base_a),
            Measure("%mcp connect --config, the cell after %load_ext", first_s), "< 1.3x", ok_a,
            note=f"{where}; the cell's line put {fmt_seconds(median(loads))} of it on loading the MCP client "
                 "(the import %load_ext starts in the background, still under way)",
            why="" if ok_a else
                "the kernel's first connect also pays the SDK import, as the bare side does, but on a kernel "
                "whose other threads (ipykernel's IOPub, the history flusher) share the 2 cores; the cell now "
                "says that part apart (notebook/commands/mcp.py `_loading`)"),
        Row("20b", name_b, Measure("bare mcp.Client, warm process: connect the four", base_b),
            Measure("%mcp connect --config again in the same kernel", again_s), "< 1.3x", ok_b,
            note=f"{where}; what a first connect costs once the MCP client is loaded",
            why="" if ok_b else
                "a warm connect through the hub in a kernel: the cell's round trip adds the kernel's execute "
                "and display messages (several thread hand-offs on a loaded machine) to the handshakes"),
    ]
