"""Row 8: streaming through `%%synapse`'s display path, against the bytes on the wire.

The model is tests/support/llm_server.py (a real HTTP server on 127.0.0.1, OpenAI wire format) reached through
the `ollama:` provider (OpenAI-compatible, no key). The measured path is the cell's own code:
`commands.ask.ask_async()` through the runner, with a live output whose publisher notes when the answer's
text reaches it — everything a `%%synapse` cell runs except IPython's message send to the frontend. The baseline is a
bare httpx client reading the same kind of response from the same server.

- 8a time to first token: the server sends the first token, then holds the rest back (as a model
  does between tokens) until the display showed it, or for 250 ms at most.
- 8b a 10,000-token answer (one SSE event per token), from the request until the cell's result; the
  server runs in a process of its own here (see `_ServerProcess`).
- 8c the end of an answer: 40 tokens sent 50 ms apart (a model's pace) and 1 ms apart; from the
  server's last SSE event to the display's final publish (the cell is idle then), against a bare httpx
  client's end of reading the same stream; the slower of the two paces is the row's figure.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from _common import SUPPORT, Measure, Row, Size, fmt_rate, fmt_seconds, interleaved, median

from tests.support.llm_server import Gate, LlmServer, text

__all__ = ["row_stream"]

FIRST = "Fjord"  # the first token: a word that appears nowhere else in the cell's output
HOLD = 0.25  # the longest the server holds the tokens after the first one


class _Shown:
    """The publisher of the cell's live output: notes when a given text first reaches the frontend."""

    def __init__(self) -> None:
        self.wanted: str | None = None
        self.at: float | None = None
        self.event = threading.Event()
        self.updates = 0
        self.final_at: float | None = None  # when the final (plain) output was published

    def expect(self, wanted: str | None) -> None:
        self.wanted, self.at, self.updates = wanted, None, 0
        self.event.clear()

    def __call__(self, bundle: dict[str, Any], display_id: str | None, update: bool) -> None:
        self.updates += 1
        if display_id is None and not update:
            self.final_at = time.perf_counter()
        if self.at is None and self.wanted is not None and self.wanted in str(bundle.get("text/plain", "")):
            self.at = time.perf_counter()
            self.event.set()


class _Connections:
    """Counts the TCP connections the LLM server accepts (keep-alive reuse shows as fewer than requests)."""

    def __init__(self, server: LlmServer) -> None:
        self.count = 0
        httpd = server._httpd  # our own test server: wrap its accept, nothing else changes
        assert httpd is not None
        accept = httpd.get_request

        def counted() -> Any:
            self.count += 1
            return accept()

        httpd.get_request = counted


def _open_when(event: threading.Event, gate: Gate) -> threading.Thread:
    """Let the server send the rest once `event` is set (the token was shown), or after HOLD seconds."""

    def run() -> None:
        event.wait(HOLD)
        gate.open()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _cell(base_url: str, shown: _Shown) -> Callable[[str], Any]:
    """A `%%synapse` cell runner: ask(prompt) through the notebook layer's own command."""
    from synapse_nb.notebook.commands.args import AskOptions
    from synapse_nb.notebook.commands.ask import ask_async
    from synapse_nb.notebook.commands.session import reset
    from synapse_nb.notebook.state import Settings, SynapseState
    from synapse_nb.notebook.subcommands import turn_parts

    os.environ["OLLAMA_BASE_URL"] = base_url
    state = SynapseState(None)
    state.port.live = True  # a kernel's frontend: live display updates
    state.port.publish = shown
    settings = Settings()  # the defaults a user gets, stream_interval included
    options = AskOptions(model="ollama:bench", tools=())

    def run(prompt: str) -> Any:
        # A new conversation per cell, as after `%synapse reset` (timed with the cell, a few µs), so that
        # the transcript (and each request) does not grow run by run.
        reset(state.sessions, state.policy)
        return state.runner.run(ask_async(turn_parts(state), settings, options, prompt))

    run.state = state  # type: ignore[attr-defined]
    return run


def _bare(base_url: str) -> tuple[asyncio.AbstractEventLoop, httpx.AsyncClient, str]:
    loop = asyncio.new_event_loop()
    client = httpx.AsyncClient(timeout=30)
    return loop, client, base_url + "/chat/completions"


def _close(loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient) -> None:
    loop.run_until_complete(client.aclose())
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


BODY = {"model": "bench", "messages": [{"role": "user", "content": "stream please"}], "stream": True}


async def _first_token_on_wire(client: httpx.AsyncClient, url: str, gate: Gate) -> float:
    """Seconds from the request until the bytes carrying the first token arrived; then read the rest."""
    t0 = time.perf_counter()
    seen = b""
    first: float | None = None
    async with client.stream("POST", url, json=BODY) as response:
        async for chunk in response.aiter_raw():
            if first is None:
                seen += chunk
                if FIRST.encode() in seen:
                    first = time.perf_counter() - t0
                    gate.open()
    assert first is not None, "the first token never arrived"
    return first


async def _read_all(client: httpx.AsyncClient, url: str) -> int:
    """Read a whole stream as a minimal client would: split lines, parse each event's JSON. Returns tokens."""
    tokens = 0
    async with client.stream("POST", url, json=BODY) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                obj = json.loads(line[6:])
                if obj.get("choices") and obj["choices"][0]["delta"].get("content"):
                    tokens += 1
    return tokens


def _ttft_row(server: LlmServer, size: Size) -> Row:
    rounds = size.pick(2, 15)
    shown = _Shown()
    cell = _cell(server.openai_base_url, shown)
    loop, client, url = _bare(server.openai_base_url)
    pieces = [FIRST, *(f" token{i}" for i in range(30))]
    wire: list[float] = []
    ours: list[float] = []
    connections = _Connections(server)
    cells: list[int] = []  # connections opened by each cell (one model request each)

    def bare() -> None:
        gate = Gate()
        server.queue(text(pieces).gated(gate))
        wire.append(loop.run_until_complete(_first_token_on_wire(client, url, gate)))

    def synapse() -> None:
        gate = Gate()
        server.queue(text(pieces).gated(gate))
        shown.expect(FIRST)
        opener = _open_when(shown.event, gate)
        before = connections.count
        t0 = time.perf_counter()
        result = cell("Say something.")
        opener.join()
        cells.append(connections.count - before)
        if result.status != "finished":
            raise RuntimeError(f"the cell did not finish: {result.status} {result.error}")
        ours.append((shown.at if shown.at is not None else float("inf")) - t0)

    try:
        interleaved({"wire": bare, "cell": synapse}, rounds, warmup=2)
        lookup = _new_name_lookup(cell.state, rounds)  # type: ignore[attr-defined]
    finally:
        _close(loop, client)
        cell.state.close()  # type: ignore[attr-defined]
    base, measured = median(wire[2:]), median(ours[2:])
    extra = measured - base
    ok = extra < 0.005
    held = extra >= HOLD * 0.8
    fresh = sum(cells[1:])  # after the first cell the provider's client could reuse its connection
    return Row(
        "8a", "streaming: time to first token shown",
        Measure("first token bytes on the wire (bare httpx)", base),
        Measure("first token in the %%synapse display", measured),
        "< 5 ms extra", ok,
        note=f"{fmt_seconds(extra)} extra: the cell's whole path (plan, agent, provider, SSE parsing, display "
             f"render, publish) from the cell's start, a new conversation per cell (`%synapse reset`); median of "
             f"{rounds}; {fresh} new HTTP connections for the {len(cells) - 1} model requests after the first. "
             f"A cell with a new `--session NAME` first looks the name up in the history file (to resume a "
             f"session recorded under it): {fmt_seconds(lookup)} more here (History.find_session, median of "
             f"{rounds})",
        finding="" if fresh == 0 else (
            f"every model request opened a new HTTP connection ({fresh} for {len(cells) - 1} requests on one "
            "provider): the adapters stop reading at the last SSE event (`[DONE]` in providers/openai.py "
            "`_attempt`, `message_stop` in providers/anthropic.py) and leave the stream, before the chunked "
            "body's terminator arrives, so httpx closes the connection instead of returning it to the pool. "
            "Free on loopback; against a hosted API each model call (every agent iteration) pays a new "
            "TCP + TLS handshake before its first token. Fix (providers): read on to the end of the body from "
            "the same iterator (a bare httpx client doing so against this server reuses one connection): e.g. "
            "the adapters "
            "`continue` past `[DONE]` / `message_stop` instead of `break` (servers end the body right after), "
            "or `HttpStreamer.post_sse` drains its `aiter_text()` iterator in a `finally` under a 1 s timeout."
        ),
        why="" if ok else (
            "the first token waits for the display's throttle, not for the code path: TurnDisplay.__call__ "
            "(synapse_nb/notebook/turns/display.py) shows a TextDelta only when `stream_interval` (0.1 s) has passed "
            "since the last update, and `start()` counts as an update. A first token that arrives sooner (a "
            f"local or fast model: here after {fmt_seconds(base)}) is held until the next event that comes after "
            "the interval, "
            f"here when the server sent the rest ({HOLD * 1000:.0f} ms later); with no further token it would "
            "wait for the end of the reply. Fix (notebook layer): publish at once when the view had no answer "
            "text yet (the first token is never throttled), and flush a held delta with "
            "`loop.call_later(remaining interval)` instead of waiting for the next event, so a pause in the "
            "stream cannot hide text either."
            if held else
            f"the cell's path adds {fmt_seconds(extra)} before the first token is shown: profile it with "
            "this row (cProfile around one `cell(...)` after the warm-ups)"
        ),
    )


def _new_name_lookup(state: Any, rounds: int) -> float:
    """Median seconds of the history lookup a `%%synapse --session NAME` cell makes for a name it has not seen."""
    history = state.store.history()
    if history is None:
        return float("nan")
    samples = []
    for n in range(rounds):
        t0 = time.perf_counter()
        history.find_session(f"bench-new-{n}")
        samples.append(time.perf_counter() - t0)
    return median(samples)


class _ServerProcess:
    """tests/support/llm_server.py in a process of its own, serving one reply to every request: a model server never
    shares the kernel's interpreter (in a thread here, its Python work would take the GIL from the reader)."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="bench-llm-")
        script = Path(self._dir.name) / "script.json"
        script.write_text(json.dumps([reply]))
        command = [sys.executable, str(SUPPORT / "llm_server.py"), "--script", str(script), "--cycle"]
        self._proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("LLM_SERVER_URL="):
            self.close()
            raise RuntimeError(f"tests/support/llm_server.py did not start: {line!r}")
        self.openai_base_url = line.partition("=")[2] + "/v1"

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=30)
        self._dir.cleanup()


def _throughput_row(size: Size) -> Row:
    tokens, rounds = size.pick((1_000, 1), (10_000, 7))
    answer = [f" t{i}" for i in range(tokens)]
    server = _ServerProcess({"text": answer})
    shown = _Shown()
    cell = _cell(server.openai_base_url, shown)
    loop, client, url = _bare(server.openai_base_url)
    updates: list[int] = []

    def bare() -> None:
        got = loop.run_until_complete(_read_all(client, url))
        assert got == tokens, got

    def synapse() -> None:
        shown.expect(None)
        result = cell("Count for me.")
        if result.status != "finished" or len(result.text) != sum(map(len, answer)):
            raise RuntimeError(f"the streamed answer did not arrive whole: {result.status}, {len(result.text)} chars")
        updates.append(shown.updates)

    try:
        s = interleaved({"wire": bare, "cell": synapse}, rounds, warmup=1)
    finally:
        _close(loop, client)
        cell.state.close()  # type: ignore[attr-defined]
        server.close()
    base, measured = median(s["wire"]), median(s["cell"])
    rate = tokens / measured
    ok = rate >= 10_000
    return Row(
        "8b", f"streaming: {tokens:,} tokens through the display path",
        Measure("bare httpx read + JSON per event", base), Measure("%%synapse cell, start to result", measured),
        "≥ 10,000 tokens/s", ok,
        note=f"{fmt_rate(tokens, measured, 'tokens')} through the display path vs {fmt_rate(tokens, base, 'tokens')} "
             f"read bare; {median(updates):.0f} display updates per answer (text throttled to one per 0.1 s); "
             f"median of {rounds}; the server (tests/support/llm_server.py) in a process of its own, one SSE event (an "
             f"HTTP chunk) per token",
        why="" if ok else
            f"{fmt_rate(tokens, measured, 'tokens')}: the per-token path (SSE decode, provider, TextDelta to "
            "every sink, history, view) costs more than 100 µs a token; profile it with this row",
    )


PACES = (0.05, 0.001)  # seconds between tokens in 8c: a model's pace, and a burst
PACED_TOKENS = 40


async def _read_to_end(client: httpx.AsyncClient, url: str) -> float:
    """Read a whole stream as a minimal client would; perf_counter() when its last event was parsed."""
    async with client.stream("POST", url, json=BODY) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                json.loads(line[6:])
            if line == "data: [DONE]":
                return time.perf_counter()
    raise RuntimeError("the stream ended without [DONE]")


def _end_row(server: LlmServer, size: Size) -> Row:
    rounds = size.pick(2, 7)
    shown = _Shown()
    cell = _cell(server.openai_base_url, shown)
    loop, client, url = _bare(server.openai_base_url)
    answer = [f" word{i}" for i in range(PACED_TOKENS)]
    wire: dict[float, list[float]] = {p: [] for p in PACES}
    ours: dict[float, list[float]] = {p: [] for p in PACES}

    def bare(pace: float) -> None:
        server.queue(text(answer).paced(pace))
        done = loop.run_until_complete(_read_to_end(client, url))
        assert server.last_event_at is not None
        wire[pace].append(done - server.last_event_at)

    def synapse(pace: float) -> None:
        server.queue(text(answer).paced(pace))
        shown.expect(None)
        shown.final_at = None
        result = cell("Talk slowly.")
        if result.status != "finished" or shown.final_at is None or server.last_event_at is None:
            raise RuntimeError(f"the cell did not finish: {result.status} {result.error}")
        ours[pace].append(shown.final_at - server.last_event_at)

    arms = {f"{kind} {p}": (lambda f=f, p=p: f(p)) for p in PACES for kind, f in (("wire", bare), ("cell", synapse))}
    try:
        interleaved(arms, rounds, warmup=1)
    finally:
        _close(loop, client)
        cell.state.close()  # type: ignore[attr-defined]
    base = {p: median(v[1:]) for p, v in wire.items()}
    measured = {p: median(v[1:]) for p, v in ours.items()}
    worst = max(PACES, key=lambda p: measured[p])
    ok = measured[worst] < 0.030
    each = ", ".join(f"{fmt_seconds(measured[p])} at {p * 1000:g} ms apart" for p in PACES)
    return Row(
        "8c", f"streaming: cell idle after the last of {PACED_TOKENS} tokens",
        Measure(f"bare httpx: last event parsed ({worst * 1000:g} ms pace)", base[worst]),
        Measure(f"%%synapse: final output published ({worst * 1000:g} ms pace)", measured[worst]),
        "< 30 ms after the server's last event, at any pace", ok,
        note=f"from the server's last SSE event to the display's final publish (the cell's end): {each}; "
             f"median of {rounds}; the display throttles text to one update per 0.1 s and flushes at the reply's end",
        why="" if ok else
            "the cell's end waits after the last token: profile commands/ask.py after the stream (closing the "
            "response, history, the display's finish)",
    )


def row_stream(size: Size) -> list[Row]:
    with LlmServer() as server:
        return [_ttft_row(server, size), _throughput_row(size), _end_row(server, size)]
