"""Row 9: the history at scale: write throughput while a turn runs, and queries over 1,000,000 tool calls.

- 9a agent turns at full speed (scripted model, in-process tool) with the history sink, until every
  event is in DuckDB; baseline: the naive recorder, one autocommit INSERT per event on a kept-open
  connection. The same turns without history are timed too (the note).
- 9b / 9c a history file holding 1,000,000 tool calls (bulk-loaded with SQL: the write path is 9a) plus
  1,000 recorded events still in the spool, read through `History` (open, attach, merge the spool, to
  pandas); baseline: the same query on a DuckDB connection already open on the file, in a helper
  process (DuckDB lets one process attach a file once, and `History` attaches it on each read).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from _common import Measure, Row, Size, bench_dir, fmt_rate, fmt_seconds, interleaved, median, run_async

from synapse_nb.agent.orchestrator import Agent
from synapse_nb.events import Event, ToolCallFinished, utcnow
from synapse_nb.history.reader import History
from synapse_nb.history.store import HistoryStore
from synapse_nb.providers.scripted import ScriptedProvider
from synapse_nb.types import ContentBlock, ToolCall, ToolResult

__all__ = ["row_store"]

TOOLS = ("query", "echo", "list_tables", "describe_table", "summarize_column")
GROUP_BY = """
SELECT tool, count(*) AS calls, avg(duration_ms) AS mean_ms,
       quantile_cont(duration_ms, 0.5) AS p50_ms, quantile_cont(duration_ms, 0.9) AS p90_ms,
       quantile_cont(duration_ms, 0.99) AS p99_ms, max(duration_ms) AS max_ms,
       avg(CAST(is_error AS INTEGER)) AS error_rate
FROM tool_calls GROUP BY tool ORDER BY calls DESC
"""
LAST_1000 = "SELECT * FROM tool_calls ORDER BY started_at DESC LIMIT 1000"
COLUMNS = ("tool_call_id, session_id, message_id, server, tool, arguments, result_text, result, is_error, error, "
           "approval, started_at, duration_ms")


# ---- 9a ----------------------------------------------------------------------------------------------------


def _naive_sink(path: Path) -> tuple[Callable[[Event], None], Callable[[], None]]:
    """The straightforward recorder: each event's rows INSERTed into DuckDB as it happens (autocommit)."""
    from synapse_nb.history.recorder import Recorder  # the store's own event -> rows mapping

    HistoryStore.open(path, strict=True).close()  # the same schema
    con = duckdb.connect(str(path))
    recorder = Recorder()
    statements: dict[tuple[str, tuple[str, ...]], str] = {}

    def sink(event: Event) -> None:
        for relation, row in recorder.rows(event):
            key = (relation, tuple(row))
            if key not in statements:
                statements[key] = (f"INSERT INTO {relation} ({', '.join(row)}) "
                                   f"VALUES ({', '.join('?' for _ in row)})")
            con.execute(statements[key], [json.dumps(v) if isinstance(v, dict | list) else v for v in row.values()])

    return sink, con.close


async def _turns(turns: int, iterations: int, sinks: list[Callable[[Event], None]]) -> int:
    """`turns` full-speed turns of `iterations` iterations, each a new session; returns the events emitted.

    Several short turns rather than one long one: a model request carries the whole transcript, so
    one turn's iterations get slower as it grows, and that is not what this row measures.
    """
    from bench_agent import noop, registry_with

    registry = registry_with(noop)
    events: list[Event] = []
    script: list[Any] = [{"tool": "noop", "arguments": {"i": i}} for i in range(iterations)] + ["done"]
    try:
        for _ in range(turns):
            agent = Agent(ScriptedProvider(script), registry, max_iterations=iterations + 1,
                          sinks=[*sinks, events.append])
            result = await agent.ask("record everything")
            if result.status != "finished":
                raise RuntimeError(f"the benchmark turn did not finish: {result}")
    finally:
        registry.close()
    return len(events)


def _write_row(size: Size) -> Row:
    (turns, iterations), rounds, naive_rounds = size.pick(((2, 20), 1, 1), ((10, 50), 7, 3))
    work = bench_dir()
    store = HistoryStore.open(work / "row9a.duckdb", strict=True)
    naive_sink, naive_close = _naive_sink(work / "row9a-naive.duckdb")
    events = 0
    flushes: list[float] = []

    def without() -> None:
        run_async(_turns(turns, iterations, []))

    def with_history() -> None:
        nonlocal events
        events = run_async(_turns(turns, iterations, [store.record]))
        t0 = time.perf_counter()
        store.flush()  # durable: every event of the turns is in the DuckDB file
        flushes.append(time.perf_counter() - t0)

    def naive() -> None:
        run_async(_turns(turns, iterations, [naive_sink]))

    try:
        s = interleaved({"off": without, "on": with_history}, rounds)
        s.update(interleaved({"naive": naive}, naive_rounds))
        messages = len(store.history().sql("SELECT message_id FROM messages"))
    finally:
        store.close()
        naive_close()
    off, on, slow = median(s["off"]), median(s["on"]), median(s["naive"])
    flush = median(flushes[1:] or flushes)
    rate = events / on
    ok = rate >= 1_000
    return Row(
        "9a", f"history write throughput while turns run ({turns} turns of {iterations} iterations)",
        Measure("naive recorder: an INSERT per event", slow), Measure("HistoryStore, until in DuckDB", on),
        "≥ 1,000 events/s", ok,
        note=f"{fmt_rate(events, on, 'events')} recorded and ingested into DuckDB ({events:,} events per run; the "
             f"final flush took {fmt_seconds(flush)}, the rest was ingested while the turns ran) vs "
             f"{fmt_rate(events, slow, 'events')} for the naive recorder; the turns alone (scripted model, no "
             f"latency) emit {fmt_rate(events, off, 'events')}, so recording adds {fmt_seconds((on - off) / events)} "
             f"per event; {messages:,} messages in the file; median of {rounds} ({naive_rounds} for the naive one)",
        why="" if ok else
            f"{fmt_rate(events, on, 'events')}: record() costs {fmt_seconds((on - off) / events)} per event on the "
            "loop (redact, serialise, spool append) plus the flusher's DuckDB ingest competing for the GIL; "
            "profile HistoryStore.record and history/ingest.py",
    )


# ---- 9b, 9c ------------------------------------------------------------------------------------------------


def load_calls(path: Path, n: int, *, step_us: int = 1000) -> None:
    """n tool calls in the history file, in bulk (named columns: later migrations may add more), started
    `step_us` microseconds apart."""
    HistoryStore.open(path, strict=True).close()
    con = duckdb.connect(str(path))
    tools = "[" + ", ".join(f"'{t}'" for t in TOOLS) + "]"
    con.execute(f"""
        INSERT INTO tool_calls ({COLUMNS})
        SELECT 'c' || i, 's' || (i // 100), 'm' || i, 'demo', {tools}[1 + i % 5],
               json_object('sql', 'SELECT * FROM orders WHERE id = ' || i, 'limit', 10),
               'row ' || i || ': ' || repeat('x', 200),
               json_object('content', json_array(json_object('kind', 'text', 'text', 'row ' || i)),
                           'is_error', i % 50 = 0, 'duration_ms', (i % 997) * 1.0),
               i % 50 = 0, NULL, 'auto',
               TIMESTAMP '2025-01-01' + to_microseconds(i * {step_us}), (i % 997) * 1.0
        FROM range({n}) t(i)
    """)
    con.close()


SPOOLED = 200  # pending events a live kernel can have between its flusher's ingests (~0.5 s apart)

BASELINE = """
import sys, time, duckdb
queries = dict(zip(("group", "last"), sys.argv[2:]))
print("ready", flush=True)
for line in sys.stdin:
    con = duckdb.connect(sys.argv[1], read_only=True)
    t0 = time.perf_counter()
    con.sql(queries[line.strip()]).to_arrow_table().to_pandas()
    print(time.perf_counter() - t0, flush=True)
    con.close()  # DuckDB lets no other process read the file meanwhile
"""

SPOOLER = """
import os, sys
sys.path.insert(0, sys.argv[3])
from bench_store import _spooled
from synapse_nb.history.store import HistoryStore
store = HistoryStore.open(sys.argv[1], strict=True)
for i in range(int(sys.argv[2])):
    store.record(_spooled(i))
os._exit(0)  # like a kernel that died before its flusher ingested: the events stay in its spool
"""


class _OpenConnection:
    """The baseline: a process that runs a query on a DuckDB connection opened before the timing starts."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", BASELINE, str(path), GROUP_BY, LAST_1000],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the baseline process did not start")
        self.samples: dict[str, list[float]] = {"group": [], "last": []}

    def time(self, name: str) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        self.samples[name].append(float(self.proc.stdout.readline()))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _spooled(i: int) -> ToolCallFinished:
    call = ToolCall(f"new{i}", f"demo__{TOOLS[i % 5]}", {"sql": f"SELECT {i}"})
    result = ToolResult((ContentBlock("text", text=f"row {i}"),), duration_ms=float(i % 97))
    return ToolCallFinished(session_id="live", call=call, server="demo", tool=TOOLS[i % 5], approval="auto",
                            started_at=utcnow(), duration_ms=float(i % 97), result=result, message_id=f"m{i}")


def _read_rows(size: Size) -> list[Row]:
    n, rounds = size.pick((10_000, 2), (1_000_000, 9))
    path = bench_dir() / "row9-calls.duckdb"
    t0 = time.perf_counter()
    load_calls(path, n)
    load = time.perf_counter() - t0
    subprocess.run([sys.executable, "-c", SPOOLER, str(path), str(SPOOLED), str(Path(__file__).parent)], check=True)
    history = History(path)
    baseline = _OpenConnection(path)
    try:
        s = interleaved({
            "group_base": lambda: baseline.time("group"),
            "group": lambda: history.sql(GROUP_BY),
            "last_base": lambda: baseline.time("last"),
            "last": lambda: history.tool_calls(limit=1000),
        }, rounds)
        total = int(history.sql("SELECT count(*) AS n FROM tool_calls")["n"][0])
        live = int((history.tool_calls(limit=1000)["session_id"] == "live").sum())
    finally:
        baseline.close()
    if total != n + SPOOLED or live != SPOOLED:  # the spooled calls must be read, and be the newest
        raise RuntimeError(f"the reads missed spooled calls: {total:,} in all, {live} of {SPOOLED} among the last")
    # The baseline's own timings (inside its process, without the pipe), warm-up dropped as for ours.
    s["group_base"], s["last_base"] = baseline.samples["group"][1:], baseline.samples["last"][1:]
    rows = []
    for row_id, key, what in (("9b", "group", "GROUP BY tool: count, mean, p50/p90/p99, max, error rate"),
                              ("9c", "last", "the last 1,000 calls as a DataFrame")):
        base, measured = median(s[f"{key}_base"]), median(s[key])
        ok = measured < 1.0
        rows.append(Row(
            row_id, f"history over {total:,} tool calls: {what}",
            Measure("DuckDB connection already open", base), Measure("synapse_nb.history()", measured),
            "< 1 s (absolute)", ok,
            note=f"{n:,} calls in the file (bulk-loaded in {fmt_seconds(load)}) and {SPOOLED} recorded but not yet "
                 f"ingested; each read opens the file, attaches it and merges the spool; median of {rounds}",
            why="" if ok else
                f"{fmt_seconds(measured)} against {fmt_seconds(base)} on an open connection: the difference "
                "is History's per-read work (attach, spool merge, views; history/reader.py)",
        ))
    return rows


def row_store(size: Size) -> list[Row]:
    return [_write_row(size), *_read_rows(size)]

