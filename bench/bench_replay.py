"""Row 14: a 20-turn notebook replayed from its cassette, against recording it from a model with 200 ms latency.

The model is tests/support/llm_server.py (a real HTTP server on 127.0.0.1, OpenAI wire, through the `ollama:`
provider: no key) holding each answer back 200 ms, as a hosted model's time to first byte. Each turn
is a `%%synapse` cell run through the notebook layer's own command (`commands.ask.ask_async` through the
runner, history on): the model asks for a notebook tool, the tool answers, the model answers. Baseline: the 20 cells
recorded (`%synapse record PATH`); measured: the same 20 cells replayed (`%synapse replay PATH`) with
the server stopped, tool calls answered from the cassette (median of a few replays, each in a fresh
session). The replayed answers are checked to equal the recorded ones.
"""

from __future__ import annotations

import os
import time
from typing import Any

from _common import Measure, Row, Size, bench_dir, fmt_seconds, median

from tests.support.llm_server import LlmServer, RecordedRequest, Reply, call, text, tool_calls

__all__ = ["row_replay"]

LATENCY = 0.2


def _respond(request: RecordedRequest) -> Reply:
    """A tool call for a new question, then an answer quoting the tool's result."""
    last = request.body["messages"][-1]
    if last["role"] == "user":
        return tool_calls(call("lookup", {"q": last["content"]}))
    return text(f"The answer is {last['content']}.", pieces=8)


def lookup(q: str) -> str:
    """Look a question up."""
    return f"42 ({q})"


def _cells(state: Any, session: str, turns: int) -> tuple[float, list[str]]:
    from synapse_nb.notebook.commands.args import AskOptions
    from synapse_nb.notebook.commands.ask import ask_async
    from synapse_nb.notebook.state import Settings
    from synapse_nb.notebook.subcommands import turn_parts

    settings = Settings()
    answers: list[str] = []
    t0 = time.perf_counter()
    for i in range(turns):
        options = AskOptions(model="ollama:bench", session=session)
        result = state.runner.run(ask_async(turn_parts(state), settings, options, f"question {i}?"))
        answers.append(str(getattr(result, "text", "")))
    return time.perf_counter() - t0, answers


def row_replay(size: Size) -> list[Row]:
    from synapse_nb.notebook.recording.tape import record, replay, stop
    from synapse_nb.notebook.state import SynapseState

    turns = size.pick(3, 20)
    rounds = size.pick(1, 3)
    cassette = bench_dir() / "cassettes" / "bench.jsonl"
    state = SynapseState(None)
    state.port.publish = lambda *_: None
    state.registry.register(lookup)
    try:
        with LlmServer(latency=LATENCY) as server:
            server.responder = _respond
            os.environ["OLLAMA_BASE_URL"] = server.openai_base_url
            _cells(state, "warm-up", 1)  # imports, the history store, the HTTP client: neither side pays for them
            record(state.deck, str(cassette))
            recorded, answers = _cells(state, "recorded", turns)
            stop(state.deck)
            requests = len(server.requests) - 2
        replay(state.deck, str(cassette))
        times = []
        for r in range(rounds):
            seconds, again = _cells(state, f"replayed-{r}", turns)
            if again != answers:
                raise AssertionError(f"replay {r} answered differently from the recording")
            times.append(seconds)
        stop(state.deck)
    finally:
        state.close()
    replayed = median(times)
    ratio = replayed / recorded
    return [Row(
        "14", f"a {turns}-turn notebook (a tool call per turn) replayed from its cassette vs recorded against a "
        f"model with {LATENCY * 1000:.0f} ms latency",
        Measure(f"recorded (%synapse record), {requests} model requests", recorded),
        Measure("replayed (%synapse replay), server stopped", replayed),
        "≥ 10x faster (< 0.1x)", ratio < 0.1,
        note=f"{fmt_seconds(replayed / turns)} per replayed cell (history on), median of {rounds} replays",
    )]
