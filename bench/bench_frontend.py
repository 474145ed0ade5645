"""Row 17: a `%%synapse` answer as a frontend sees it, over ZMQ from a real kernel.

A jupyter_client frontend (this process) drives a fresh IPython kernel of this interpreter with the
extension loaded; the model is tests/support/llm_server.py (a real HTTP server on 127.0.0.1, OpenAI wire format,
reached through the `ollama:` provider) streaming WORDS words PACE seconds apart and ending the body
right after `data: [DONE]`. Every time is taken when the iopub message reached this process (what a
frontend can show), against perf_counter() stamps the server took as it sent the first and the last
event (one clock: CLOCK_MONOTONIC, shared by the processes of the machine).

- 17a / 17b the placeholder: execute request sent until the cell's first visible output, for the first
  `%%synapse` of a fresh kernel (17a: it resolves the provider, looks up the session name in the
  history, imports what the turn needs) and for later cells (17b); baseline: an empty cell's round trip
  in the same kernel.
- 17c first text: from the server sending the first word until it shows in the cell.
- 17d last text: from the server sending the last event until the last word shows.
- 17e / 17f idle: from the server's last event until the kernel's idle message, history on (17e) and
  `--no-history` (17f).
Baselines of 17c-17f: a bare httpx client in this process reading the same stream from the same server
(first event parsed / last event parsed). Kernels alternate between the history on and off cells.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from _common import Measure, Row, Size, bench_dir, fmt_seconds, median

from tests.support.llm_server import LlmServer, text

__all__ = ["Cell", "Frontend", "row_frontend"]

FIRST = "Fjord"  # the first word: it appears nowhere else in the cell's output
STRIPPED = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OLLAMA_API_KEY", "SYNAPSE_MODEL",
            "SYNAPSE_MCP_CONFIG", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "MCP_URL")
SHOWN = ("display_data", "update_display_data", "execute_result", "stream")


@dataclass
class Cell:
    """What one execute request produced, each iopub message stamped when it reached the frontend."""

    sent: float
    idle: float = float("nan")
    status: str = ""
    shown: list[tuple[float, str]] = field(default_factory=list)  # (when, text/plain) of visible outputs

    def first_visible(self) -> float:
        return next((t for t, s in self.shown if s.strip()), float("nan"))

    def first_with(self, word: str) -> float:
        return next((t for t, s in self.shown if word in s), float("nan"))


class Frontend:
    """A fresh kernel of this interpreter and its client, as JupyterLab would drive it (ZMQ over IPC)."""

    def __init__(self, work: Path, env: Mapping[str, str], python: str | None = None) -> None:
        """`python`: the interpreter of the kernel (another venv's, for a peer); default this one."""
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import KernelManager

        work.mkdir(parents=True, exist_ok=True)
        specs = work / "kernels"
        (specs / "bench").mkdir(parents=True, exist_ok=True)
        argv = [python or sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (specs / "bench" / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "bench",
                                                                 "language": "python"}))
        self.km = KernelManager(kernel_name="bench", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]),
                                transport="ipc", ip=str(work / "kernel-ipc"))
        self.km.start_kernel(cwd=str(work), env=dict(env))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 120.0) -> Cell:
        msg_id = self.kc.execute(code, store_history=False)
        cell = Cell(sent=time.perf_counter())
        deadline = time.monotonic() + timeout
        while cell.idle != cell.idle or not cell.status:  # idle is NaN until the idle message came
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cell did not finish in {timeout:.0f} s: {code[:60]!r}")
            if cell.idle != cell.idle:
                try:
                    msg = self.kc.get_iopub_msg(timeout=1.0)
                except queue.Empty:
                    continue
                now = time.perf_counter()
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "status" and content["execution_state"] == "idle":
                    cell.idle = now
                elif kind in SHOWN:
                    data = content.get("data", {})  # a peer's Markdown result has its text in text/markdown only
                    shown = content.get("text") if kind == "stream" else (
                        f"{data.get('text/plain', '')}\n{data.get('text/markdown', '')}")
                    cell.shown.append((now, str(shown or "")))
                elif kind == "error":
                    raise RuntimeError(f"the cell failed: {content.get('ename')}: {content.get('evalue')}")
            else:
                try:
                    reply = self.kc.get_shell_msg(timeout=1.0)
                except queue.Empty:
                    continue
                if reply["parent_header"].get("msg_id") == msg_id:
                    cell.status = str(reply["content"]["status"])
        if cell.status != "ok":
            raise RuntimeError(f"the cell ended {cell.status}: {code[:60]!r}")
        return cell

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


async def _bare_read(client: httpx.AsyncClient, url: str) -> tuple[float, float]:
    """A minimal client reading the stream: perf_counter() when the first word and when [DONE] were parsed."""
    first = done = float("nan")
    body = {"model": "bench", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if first != first and FIRST in line:
                first = time.perf_counter()
            if line == "data: [DONE]":
                done = time.perf_counter()
    return first, done


def _reply(words: int, pace: float) -> Any:
    return text([FIRST, *(f" word{i}" for i in range(1, words))]).paced(pace)


@dataclass
class _Samples:
    load: list[float] = field(default_factory=list)  # %load_ext round trips
    empty: list[float] = field(default_factory=list)  # empty cell round trips
    first_placeholder: list[float] = field(default_factory=list)  # the first %%synapse of each kernel
    placeholder: list[float] = field(default_factory=list)  # later cells
    first_text: list[float] = field(default_factory=list)
    last_text: list[float] = field(default_factory=list)
    idle: dict[bool, list[float]] = field(default_factory=lambda: {True: [], False: []})  # history on / off
    bare_first: list[float] = field(default_factory=list)
    bare_last: list[float] = field(default_factory=list)


def _measure(server: LlmServer, kernels: int, cells: int, words: int, pace: float) -> _Samples:
    samples = _Samples()
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    env["OLLAMA_BASE_URL"] = server.openai_base_url
    url = server.openai_base_url + "/chat/completions"
    last_word = f"word{words - 1}"
    loop = asyncio.new_event_loop()
    client = httpx.AsyncClient(timeout=60)
    try:
        for k in range(kernels):
            work = bench_dir() / f"kernel{k}"
            env["SYNAPSE_DB"] = str(work / "history.duckdb")
            frontend = Frontend(work, env)
            try:
                for _ in range(3):
                    samples.empty.append(_round_trip(frontend.run("pass")))
                samples.load.append(_round_trip(frontend.run("%load_ext synapse_nb")))
                for c in range(cells):
                    history = c % 2 == 0  # the first cell of a kernel records (the default), then off, on, ...
                    server.queue(_reply(words, pace))
                    flags = "--no-tools" + ("" if history else " --no-history")
                    cell = frontend.run(f"%%synapse --model ollama:bench {flags}\nSay something, slowly.")
                    first_sent, last_sent = server.first_content_at, server.last_event_at
                    if first_sent is None or last_sent is None:
                        raise RuntimeError("the LLM server sent no stream")
                    (samples.first_placeholder if c == 0 else samples.placeholder).append(
                        cell.first_visible() - cell.sent)
                    samples.first_text.append(cell.first_with(FIRST) - first_sent)
                    samples.last_text.append(cell.first_with(last_word) - last_sent)
                    samples.idle[history].append(cell.idle - last_sent)
                    # the floor: a bare client reading the same stream, right after
                    server.queue(_reply(words, pace))
                    first, done = loop.run_until_complete(_bare_read(client, url))
                    assert server.first_content_at is not None
                    assert server.last_event_at is not None
                    samples.bare_first.append(first - server.first_content_at)
                    samples.bare_last.append(done - server.last_event_at)
            finally:
                frontend.close()
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()
    return samples


def _round_trip(cell: Cell) -> float:
    return cell.idle - cell.sent


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def row_frontend(size: Size) -> list[Row]:
    kernels, cells, words, pace = size.pick((1, 2, 8, 0.005), (5, 5, 40, 0.05))
    load_before = _load()
    with LlmServer() as server:
        s = _measure(server, kernels, cells, words, pace)
    where = (f"a frontend (jupyter_client over ZMQ, IPC) and a fresh kernel of this interpreter with the extension "
             f"loaded; {words} words {pace * 1000:g} ms apart from tests/support/llm_server.py; load average "
             f"{load_before} before, {_load()} after (1, 5, 15 min, 2 cores)")
    empty = median(s.empty)
    first_ph, later_ph = median(s.first_placeholder), median(s.placeholder) if s.placeholder else float("nan")
    first_text, last_text = median(s.first_text), median(s.last_text)
    idle_on, idle_off = median(s.idle[True]), median(s.idle[False]) if s.idle[False] else float("nan")
    bare_first, bare_last = median(s.bare_first), median(s.bare_last)
    n_later = len(s.placeholder)
    rows = [
        Row("17a", "first `%%synapse` of a fresh kernel: placeholder shown after execute",
            Measure("empty cell round trip", empty), Measure("first visible output", first_ph),
            "< 100 ms (absolute)", first_ph < 0.1,
            note=f"{where}; %load_ext round trip {fmt_seconds(median(s.load))}; median of {kernels} kernels",
            why="" if first_ph < 0.1 else
                "before anything is drawn the first cell resolves the provider (importing httpx, the agent layer), "
                "opens the history and looks the session name up in it (notebook/commands/ask.py `plan_turn` -> "
                "notebook/state.py `own_session_name`, which ran a pandas query: ~1 s of import); fixed in "
                "history/ (`History.rows`, no pandas) and providers/ (one shared TLS context, none for http); the "
                "rest needs the placeholder published before `plan_turn` (patch "
                "/work/brief/patches/bench-kernel-placeholder-first.diff)"),
        Row("17b", "later `%%synapse` cells: placeholder shown after execute",
            Measure("empty cell round trip", empty), Measure("first visible output", later_ph),
            "< 100 ms (absolute)", later_ph < 0.1, note=f"median of {n_later} cells",
            why="" if later_ph < 0.1 else "see 17a; a loaded machine delays every thread hand-off of the kernel"),
        Row("17c", "first text shown after its chunk left the server",
            Measure("bare httpx: first event parsed", bare_first), Measure("first word in the cell", first_text),
            "< 30 ms", first_text < 0.03, note=f"median of {len(s.first_text)} cells",
            why="" if first_text < 0.03 else
                "the first word waits behind the same thread hand-offs and background threads as 17d, and in a "
                "kernel's first cell behind the provider's first imports (httpx, the agent layer)"),
        Row("17d", "last text shown after the last chunk left the server",
            Measure("bare httpx: [DONE] parsed", bare_last), Measure("last word in the cell", last_text),
            "< 30 ms", last_text < 0.03, note=f"median of {len(s.last_text)} cells",
            why="" if last_text < 0.03 else _WHY_END),
        Row("17e", "kernel idle after the server's last event, history on",
            Measure("bare httpx: [DONE] parsed", bare_last), Measure("idle message received", idle_on),
            "< 30 ms", idle_on < 0.03, note=f"median of {len(s.idle[True])} cells",
            why="" if idle_on < 0.03 else _WHY_END),
        Row("17f", "kernel idle after the server's last event, `--no-history`",
            Measure("bare httpx: [DONE] parsed", bare_last), Measure("idle message received", idle_off),
            "< 30 ms", idle_off < 0.03, note=f"median of {len(s.idle[False])} cells",
            why="" if idle_off < 0.03 else _WHY_END),
    ]
    return rows


_WHY_END = (
    "after [DONE] the kernel's main thread needs little CPU; it waits. The turn publishes 2 outputs after the "
    "last event (the emptied live output and the final one: notebook/turns/display.py, output.py) without waiting "
    "on ipykernel's IOPub thread (notebook/kernel/port.py: kernel_publisher), and ipykernel flushes twice "
    "before the reply and twice before idle, each a thread hand-off and a scheduler wake-up (several ms on 2 "
    "busy cores). Meanwhile background threads of the kernel compete for the GIL and the cores: the MCP SDK "
    "preload that %load_ext starts (~1 s of CPU for a few s after loading) and the history flusher's DuckDB "
    "ingest (history/store.py waits for QUIET before it). Trace the end of a turn in the kernel to see which"
)
