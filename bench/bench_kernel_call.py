"""Row 21: `%mcp call` as a frontend sees it, over ZMQ from a real kernel, against the awaited call and the SDK.

A jupyter_client frontend (this process, ZMQ over IPC) drives a fresh kernel of this interpreter with the
extension loaded and the demo server (tests/support/tools_server.py) connected over stdio. Every time is a cell's,
from the execute request until the kernel's idle message (what a user waits for).

- 21a the same `echo` call as a whole-cell `%mcp call demo.echo text=...` and as the documented awaited call
  (`await synapse_nb.notebook.current().hub.call("demo__echo", ...)`), each ending in its Out[]; the two
  cells take turns in one kernel, and the ratio is the median of each round's (the machine's drift over
  the minute the row takes falls on both cells of a round). Row 2 is the in-process figure of the same
  comparison; the %mcp call also records the call in the history, as every call it makes is.
- 21b the first tool call after connect: in a fresh kernel, `%load_ext`, `%mcp connect demo`, then the first
  `%mcp call demo.large kb=10240` (10 MB of text, shown capped); baseline: a fresh interpreter's first
  `call_tool` of the same tool with the bare SDK right after its connect (row 12's bare side).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _common import DEMO_ARGS, Measure, Row, Size, bench_dir, fmt_seconds, median, paired_ratio
from bench_frontend import STRIPPED, Frontend
from bench_hub import _FIRST_CALL

__all__ = ["row_kernel_call"]

TEXT = "hello from the benchmark"
MAGIC = f"%mcp call demo.echo text='{TEXT}'"
AWAITED = f"await synapse_nb.notebook.current().hub.call('demo__echo', {{'text': '{TEXT}'}})"
CONNECT = f"%mcp connect demo -- {sys.executable} {' '.join(DEMO_ARGS)}"


def _kernel(work: Path) -> Frontend:
    """A fresh kernel with the extension loaded and the demo server connected."""
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    env["SYNAPSE_DB"] = str(work / "history.duckdb")
    kernel = Frontend(work, env)
    try:
        kernel.run("%load_ext synapse_nb\nimport synapse_nb.notebook")
        connected = kernel.run(CONNECT)
        said = "\n".join(text for _, text in connected.shown)
        if "connected" not in said:
            raise RuntimeError(f"the demo server did not connect: {said[-400:]}")
    except BaseException:
        kernel.close()
        raise
    return kernel


def _shows(cell_text: str, what: str) -> None:
    if what not in cell_text:
        raise RuntimeError(f"the cell did not show {what!r}: {cell_text[-300:]}")


def _whole_cell(size: Size) -> tuple[list[float], list[float]]:
    """21a: each round's (awaited call cell s, %mcp call cell s), the two in turn, A B then B A."""
    cells = size.pick(5, 40)
    kernel = _kernel(bench_dir() / "kernel_call")
    awaited: list[float] = []
    magic: list[float] = []
    try:
        for n in range(cells + 3):  # three warm-up rounds: the first calls import and compile what they use
            order = (AWAITED, MAGIC) if n % 2 == 0 else (MAGIC, AWAITED)
            ran = {code: kernel.run(code) for code in order}
            for cell in ran.values():
                _shows("\n".join(text for _, text in cell.shown), TEXT)
            if n >= 3:
                awaited.append(ran[AWAITED].idle - ran[AWAITED].sent)
                magic.append(ran[MAGIC].idle - ran[MAGIC].sent)
    finally:
        kernel.close()
    return awaited, magic


def _bare_first_call() -> float:
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL, "bare", *DEMO_ARGS], capture_output=True, text=True,
                         timeout=300, check=True)
    result = json.loads(out.stdout)
    if result["size"] != 10 * 1024 * 1024:
        raise RuntimeError(f"the bare SDK's result had {result['size']} characters, not 10 MB")
    return float(result["seconds"])


def _kernel_first_call(work: Path) -> float:
    kernel = _kernel(work)
    try:
        cell = kernel.run("%mcp call demo.large kb=10240", timeout=300)
        _shows("\n".join(text for _, text in cell.shown), "demo.large")
        return cell.idle - cell.sent
    finally:
        kernel.close()


def row_kernel_call(size: Size) -> list[Row]:
    awaited, magic = _whole_cell(size)
    base_a, measured_a, cells = median(awaited), median(magic), len(magic)
    ratio_a = paired_ratio(magic, awaited)  # each round's two cells ~30 ms apart: the machine's drift cancels
    over = ratio_a - 1
    rounds = size.pick(1, 3)
    bare: list[float] = []
    ours: list[float] = []
    for i in range(rounds):
        bare.append(_bare_first_call())
        ours.append(_kernel_first_call(bench_dir() / f"kernel_first_call{i}"))
    base_b, measured_b = median(bare), median(ours)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    where = f"jupyter_client over ZMQ (IPC) against a kernel of this interpreter; load average {load} (2 cores)"
    ok_a, ok_b = over < 0.10, measured_b < 1.2 * base_b
    return [
        Row("21a", "whole-cell `%mcp call` vs the awaited call, cell to idle in a real kernel",
            Measure("`await ….hub.call(...)` cell", base_a), Measure("`%mcp call demo.echo` cell", measured_a),
            "overhead < 10%", ok_a, ratio=ratio_a,
            note=f"{where}; the demo server's echo over stdio, each cell ending in its Out[]; {cells} rounds of "
                 f"the two cells in turn (A B, then B A), after 3 warm-up rounds; the ratio is the median of the "
                 f"rounds' ratios (of the medians: {measured_a / base_a:.2f}x); "
                 f"{fmt_seconds(measured_a - base_a)} more per cell (row 2 is the same in process)",
            why="" if ok_a else
                "the whole-cell call adds the magic's line parsing, its ticking live output (two publishes and "
                "a clear) and the result's rich rendering to the awaited call; profile the cell in the kernel"),
        Row("21b", "first tool call after connect in a fresh kernel, a 10 MB result: `%mcp call` vs the bare SDK",
            Measure("bare mcp.Client, first call (fresh interpreter)", base_b),
            Measure("first `%mcp call demo.large` cell", measured_b), "< 1.2x", ok_b,
            note=f"{where}; a fresh kernel per round: %load_ext, %mcp connect demo, then the timed cell (execute "
                 f"request to idle; the 10 MB text is shown capped); median of {rounds}",
            why="" if ok_b else
                "what the bare SDK does not do: the call lands in the history before the cell ends (a tool result "
                "is spooled masked, so it survives a crash: for 10 MB, ~0.14 s of masking, which is 21 substring "
                "scans of the lower-cased text, and ~0.05 s of JSON; history/store.py record), and the cell shows "
                "the result capped (the kernel's round trip and the Out[]). The SDK's own stdio reader, which "
                "re-splits its growing line buffer on every 64 KB chunk, takes 0.5-0.8 s of either side, so the "
                "ratio moves by ~0.1 from run to run"),
    ]
