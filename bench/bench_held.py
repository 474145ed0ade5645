"""Row 22: a `%%synapse` turn over a 50,000-row result of a real database server, held by the kernel vs sent inline.

    python bench/bench_held.py [--small]     # this module's own table
    python bench/run.py --only 23             # the same measurement as a row of results.md

The server is MotherDuck's MCP server (PyPI, .tools/motherduck) on a local DuckDB file of 50,000 orders; the model
is tests/support/llm_server.py (a real HTTP server on 127.0.0.1, OpenAI wire, through the `ollama:` provider: no
key) counting each request's prompt tokens (tests/support/llm_cache.py: one token per 4 bytes) and, as a hosted
model does, refusing a prompt over its context window (200,000 tokens) with a 400. Its replies are scripted from
what each request shows it, as a model reads: it asks for every order, then answers "revenue by region" from the
rows it can see; shown a held result's summary, it asks `results__sql` for the GROUP BY and answers from that.

Each turn is a `%%synapse` cell through the notebook layer's own command (`commands.ask.ask_async`, history on):
- held (measured): the default, the 50,000 rows held as a DataFrame, the model given a summary;
- inline, whole (`--hold-over 0`, `max_result_chars` 0): every row in the prompt, over the window: no answer;
- inline, cut (`--hold-over 0`, the old 20,000-character cut): the model answers from the ~300 rows it saw: wrong.
Targets: the held turn's answer is exact; its prompt tokens are at most 1/20 of the whole result inline; its time
to the model's last reply is no worse than the whole-inline turn's (median of interleaved rounds). The cut turn's time
is shown beside, for information: it is quicker by a model request, and wrong.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import Measure, Row, Size, bench_dir, median, table

from tests.support.llm_cache import PromptCache, tokens_of
from tests.support.llm_server import LlmServer, RecordedRequest, Reply, call, error, text, tool_calls
from tests.support.pypi_servers import MOTHERDUCK_VENV

__all__ = ["row_held"]

ROWS = 50_000
REGIONS = ("north", "south", "east", "west")
CONTEXT_TOKENS = 200_000
"""The model's context window: a prompt over it is refused (400), as hosted models do."""
QUESTION = "What is the revenue of each region, over every order?"
SQL = "SELECT region, sum(total) AS revenue FROM {name} GROUP BY region ORDER BY region"
_ROW = re.compile(r'\[\s*\d+\s*,\s*"(\w+)"\s*,\s*([0-9.]+)')
_HELD = re.compile(r"\[held: .*? as `(\w+)`")


def exact() -> dict[str, float]:
    """The revenue of each region, from the formula the table was made with."""
    out = dict.fromkeys(REGIONS, 0.0)
    for i in range(ROWS):
        out[REGIONS[i % 4]] += (i % 97) + (i % 7) / 4
    return out


def make_orders(path: Path) -> None:
    """50,000 orders in a DuckDB file, written by the server's own duckdb (its file format)."""
    regions = "[" + ", ".join(f"'{r}'" for r in REGIONS) + "]"
    subprocess.run([str(MOTHERDUCK_VENV / "bin" / "python"), "-c", (
        "import duckdb, sys; c = duckdb.connect(sys.argv[1]); c.execute(\"CREATE OR REPLACE TABLE orders AS SELECT "
        f"range AS id, {regions}[range % 4 + 1] AS region, (range % 97) + (range % 7) / 4 AS total "
        f"FROM range({ROWS})\"); c.close()"
    ), str(path)], check=True, timeout=300)


def _answer(revenue: dict[str, float]) -> str:
    return "; ".join(f"{r}: {revenue.get(r, 0.0):.2f}" for r in REGIONS)


def respond(request: RecordedRequest) -> Reply:
    """The scripted model: it reads what the request shows it (see the module docstring)."""
    if tokens_of(request.raw) > CONTEXT_TOKENS:
        return error(400, f"This model's maximum context length is {CONTEXT_TOKENS} tokens; the prompt is longer "
                          "(context_length_exceeded)")
    messages = request.body["messages"]
    last = messages[-1]
    if last["role"] == "user":
        return tool_calls(call("md__execute_query", {"sql": "SELECT id, region, total FROM orders ORDER BY id"}))
    content = str(last["content"])
    held = _HELD.search(content)
    if held is not None:
        return tool_calls(call("results__sql", {"sql": SQL.format(name=held.group(1))}))
    revenue: dict[str, float] = {}
    if content.startswith("region,revenue"):  # results__sql's answer: CSV
        for line in content.splitlines()[1:]:
            region, value = line.split(",")
            revenue[region] = float(value)
    else:  # the rows it can see, as a model would add them up
        for region, total in _ROW.findall(content):
            revenue[region] = revenue.get(region, 0.0) + float(total)
    return text(_answer(revenue))


def _cell(state: Any, session: str, hold_over: int | None, max_result_chars: int) -> tuple[float, Any]:
    from synapse_nb.notebook.commands.args import AskOptions
    from synapse_nb.notebook.commands.ask import TurnError, ask_async
    from synapse_nb.notebook.state import Settings
    from synapse_nb.notebook.subcommands import turn_parts

    settings = Settings(max_result_chars=max_result_chars)
    options = AskOptions(model="ollama:bench", session=session, hold_over=hold_over)
    t0 = time.perf_counter()
    try:
        result = state.runner.run(ask_async(turn_parts(state), settings, options, QUESTION))
    except TurnError:
        result = state.sessions.agent(session, state.models.provider("ollama:bench")).last_result
    return time.perf_counter() - t0, result


def _prompt_tokens(server: LlmServer, start: int) -> int:
    return sum(tokens_of(r.raw) for r in server.requests[start:])


def row_held(size: Size) -> list[Row]:
    import os

    from synapse_nb.notebook.state import SynapseState
    from synapse_nb.server_config import ServerConfig

    rounds = size.pick(1, 3)
    db = bench_dir() / "held" / "orders.duckdb"
    db.parent.mkdir(parents=True, exist_ok=True)
    make_orders(db)
    want = _answer(exact())
    state = SynapseState(None)
    state.port.publish = lambda *_: None
    command = MOTHERDUCK_VENV / "bin" / "mcp-server-motherduck"
    times: dict[str, list[float]] = {"held": [], "whole": [], "cut": []}
    arms = {"held": (None, 20000), "whole": (0, 0), "cut": (0, 20000)}  # (--hold-over, max_result_chars)
    answers: dict[str, str] = {}
    tokens: dict[str, int] = {}
    statuses: dict[str, str] = {}
    try:
        with LlmServer(prompt_cache=PromptCache()) as server:
            server.responder = respond
            os.environ["OLLAMA_BASE_URL"] = server.openai_base_url
            state.runner.run(state.hub.connect_server(ServerConfig(
                "md", command=str(command),
                args=["--db-path", str(db), "--max-rows", "100000", "--max-chars", "100000000"])))
            _cell(state, "warm-up", None, 20000)  # imports, the store, the HTTP client, the server's first query
            order = list(arms)
            for r in range(rounds):
                for arm in (order if r % 2 == 0 else order[::-1]):
                    # the last turn's history (~12 MB: its rows are recorded whole) reaches the file before this
                    # turn starts, untimed: each arm pays for its own recording, not for the arm before it
                    state.store.flush(60)
                    start = len(server.requests)
                    seconds, result = _cell(state, f"{arm}-{r}", *arms[arm])
                    times[arm].append(seconds)
                    answers[arm] = str(getattr(result, "text", ""))
                    statuses[arm] = str(getattr(result, "status", "no result"))
                    tokens[arm] = _prompt_tokens(server, start)
                    state.held.clear()
    finally:
        state.close()
    held_s, whole_s, cut_s = median(times["held"]), median(times["whole"]), median(times["cut"])
    exact_held = answers["held"] == want
    token_ratio = tokens["held"] / tokens["whole"]
    whole_note = "refused: over the model's window" if statuses["whole"] == "failed" else (
        "exact answer" if answers["whole"] == want else "wrong answer")
    return [
        Row(
            "23a", "a 50,000-row database result in a %%synapse turn: prompt tokens, held vs the whole result inline",
            Measure(f"inline, whole ({whole_note})", tokens["whole"], f"{tokens['whole']:,} tokens"),
            Measure(f"held ({'exact answer' if exact_held else 'WRONG answer: ' + answers['held']})", tokens["held"],
                    f"{tokens['held']:,} tokens"),
            "≤ 1/20 of the prompt tokens (< 0.05), and the exact answer", token_ratio <= 0.05 and exact_held,
            note=f"prompt tokens of all the turn's model requests; the window is {CONTEXT_TOKENS:,} tokens",
        ),
        Row(
            "23b", "the same turn: time to the model's last reply, held vs the whole result inline",
            Measure(f"inline, whole ({whole_note})", whole_s),
            Measure("held (3 model requests: the query, results__sql, the answer)", held_s),
            "no worse (≤ 1.0x) and exact", held_s <= whole_s and exact_held,
            note=f"median of {rounds} interleaved rounds; the history file is brought up to date before each turn, "
                 "untimed, so no turn pays for the recording of the one before",
            why="" if held_s <= whole_s else "the held turn makes one more model request (results__sql) and reads "
                "the 50,000 rows into a DataFrame; the inline one is refused as soon as it is sent",
        ),
        Row(
            "23c", "the same turn: time to the answer, held vs inline cut at 20,000 characters (the old way)",
            Measure(f"inline, cut ({'exact' if answers['cut'] == want else 'wrong'} answer from the rows it saw, "
                    f"{tokens['cut']:,} tokens)", cut_s),
            Measure("held (exact answer)" if exact_held else "held (WRONG answer)", held_s),
            "informational: the old way answers wrongly", None,
            note=f"median of {rounds} interleaved rounds; held: {answers['held'][:70]}; cut: {answers['cut'][:70]}",
            finding="" if held_s <= cut_s else "held costs one more model request (results__sql) and the DataFrame "
                    "read (~0.4 s) against a wrong answer; against a hosted model add its time to first byte",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    rows = row_held(Size(small=args.small))
    print(table(rows))
    print(json.dumps([r.to_json() for r in rows], indent=1, default=str)[:2000])


if __name__ == "__main__":
    main()
