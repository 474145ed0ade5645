"""Row 19: `%%synapse` against jupyter-ai's `%%ai`, each in a real kernel driven over ZMQ, on one wire server.

The same answer (WORDS words) from tests/llm_server.py: `%%synapse` (the `ollama:` provider) gets it
streamed PACE seconds apart; `%%ai openai-chat-custom:bench` (jupyter-ai-magics in its own venv,
.tools/bench-peers/jupyter-ai from `make bench-tools`, pointed at the server by OPENAI_API_BASE) asks
without streaming, so the server sends the whole completion once the same WORDS x PACE have passed.
- 19a first visible text after execute; target (issue 22): `%%synapse` at least 10x sooner.
- 19b idle after the model's last byte (`%%synapse`: the last SSE event; `%%ai`: its response); target:
  `%%synapse` no later than `%%ai`.
Each kernel runs one warm-up cell first (a kernel's first cell is rows 17a and 10a).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from _common import REPO, Measure, Row, Size, bench_dir, median
from bench_frontend import STRIPPED, Frontend
from llm_server import Gate, LlmServer, raw_body, text

__all__ = ["row_ai_peer"]

PEER = REPO / ".tools" / "bench-peers" / "jupyter-ai" / "bin" / "python"
FIRST = "Fjord"


def _words(words: int) -> list[str]:
    return [FIRST, *(f" word{i}" for i in range(1, words))]


def _completion(words: int) -> bytes:
    message = {"role": "assistant", "content": "".join(_words(words))}
    return json.dumps({"id": "bench", "object": "chat.completion", "created": 0, "model": "bench",
                       "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": words, "total_tokens": words + 5}}).encode()


class _Whole:
    """Queue a whole (non-streamed) completion, sent WORDS x PACE after the request came; note when."""

    def __init__(self, server: LlmServer, words: int, pace: float) -> None:
        self.server, self.words, self.pace = server, words, pace
        self.sent_at: float | None = None

    def queue(self) -> None:
        gate = Gate()
        self.sent_at = None

        def release() -> None:
            time.sleep(self.words * self.pace)  # the model's time to write the answer, as the stream takes
            self.sent_at = time.perf_counter()
            gate.open()

        self.server.on_request = lambda _request: threading.Thread(target=release, daemon=True).start()
        self.server.queue(raw_body(200, _completion(self.words)).held(gate))


def _env(server: LlmServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    env.update(OLLAMA_BASE_URL=server.openai_base_url, OPENAI_API_BASE=server.openai_base_url,
               OPENAI_API_KEY="sk-bench-not-a-key")
    return env


def _ours(server: LlmServer, cells: int, words: int, pace: float) -> tuple[list[float], list[float]]:
    work = bench_dir() / "synapse-kernel"
    frontend = Frontend(work, {**_env(server), "SYNAPSE_DB": str(work / "history.duckdb")})
    first: list[float] = []
    idle: list[float] = []
    try:
        frontend.run("%load_ext synapse_nb")
        for n in range(cells + 1):
            server.queue(text(_words(words)).paced(pace))
            cell = frontend.run("%%synapse --model ollama:bench --no-tools\nSay something, slowly.")
            if n and server.last_event_at is not None:
                first.append(cell.first_with(FIRST) - cell.sent)
                idle.append(cell.idle - server.last_event_at)
    finally:
        frontend.close()
    return first, idle


def _peer(server: LlmServer, cells: int, words: int, pace: float) -> tuple[list[float], list[float]]:
    if not PEER.exists():
        raise RuntimeError(f"jupyter-ai-magics is not installed at {PEER.parent.parent}: run `make bench-tools`")
    frontend = Frontend(bench_dir() / "ai-kernel", _env(server), python=str(PEER))
    whole = _Whole(server, words, pace)
    first: list[float] = []
    idle: list[float] = []
    try:
        frontend.run("%load_ext jupyter_ai_magics")
        for n in range(cells + 1):
            whole.queue()
            cell = frontend.run("%%ai openai-chat-custom:bench\nSay something, slowly.")
            if n and whole.sent_at is not None:
                first.append(cell.first_with(FIRST) - cell.sent)
                idle.append(cell.idle - whole.sent_at)
    finally:
        server.on_request = None
        frontend.close()
    return first, idle


def row_ai_peer(size: Size) -> list[Row]:
    cells, words, pace = size.pick((1, 8, 0.005), (5, 40, 0.05))
    with LlmServer() as server:
        ai_first, ai_idle = _peer(server, cells, words, pace)
        our_first, our_idle = _ours(server, cells, words, pace)
    a_first, s_first, a_idle, s_idle = map(median, (ai_first, our_first, ai_idle, our_idle))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    where: Any = (f"{words} words {pace * 1000:g} ms apart, each kernel over ZMQ after a warm-up cell; median of "
                  f"{cells} cells; load average {load} at the end (2 cores)")
    return [
        Row("19a", "first visible text after execute: `%%synapse` vs jupyter-ai's `%%ai`",
            Measure("%%ai (jupyter-ai-magics, whole answer)", a_first), Measure("%%synapse, streamed", s_first),
            "≥ 10x sooner (< 0.1x)", s_first < 0.1 * a_first, note=where,
            why="" if s_first < 0.1 * a_first else "see row 17c: the first word's path in the kernel"),
        Row("19b", "idle after the model's last byte: `%%synapse` vs `%%ai`",
            Measure("%%ai: idle after its response", a_idle), Measure("%%synapse: idle after the last event", s_idle),
            "no later (≤ 1x)", s_idle <= a_idle, note=where,
            why="" if s_idle <= a_idle else (
                "both are within a few ms of an empty cell's whole round trip in a kernel (row 17a's baseline). "
                "Traced in the kernel (2026-11-27, after the provider stopped waiting for the server to close "
                "the stream: its tail is read in the background): from the last event, the reply's end (price, "
                "spend, the history line, the message and turn events) takes ~1-1.5 ms; the display then sends "
                "two outputs, the live one emptied and the final one (which nbval needs), at ~0.5-1 ms each "
                "through IPython's display path (two waits on ipykernel's IOPub thread each); then ipykernel "
                "flushes, replies and says idle (~3 ms, as for `%%ai`). `%%ai` sends one output. See rows "
                "17e/17f for the figure in a fresh kernel, and rerun with `--only 17,19` on a quiet machine")),
    ]
