"""Benchmark of the history store: write rate while another process reads, and queries over 1M tool calls.

    python bench/bench_history.py            # full: 20,000 events, 1,000,000 tool calls
    python bench/bench_history.py --small    # tiny, seconds (run by the test suite so it cannot rot)

Every number is printed next to a baseline measured in the same run on the same machine:
- writing: HistoryStore.record() of N tool-call events, then flush() until all are in DuckDB, with a
  second process querying the file in a loop the whole time; baseline: the same rows inserted one
  autocommit INSERT each through a kept-open DuckDB connection (the naive recorder; no other process
  can even open the file meanwhile).
- reading: History over a file holding 1,000,000 tool calls (bulk-loaded with SQL: the write path is
  measured above) plus 1,000 events still in the spool; baseline: the same query on a DuckDB
  connection that is already open on the file (no open, attach, or spool merge).
The ratio is ours / baseline (for rates: higher is better; for latencies: lower is better).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import duckdb  # noqa: E402
from bench_store import TOOLS, load_calls  # noqa: E402  (bench/ is on sys.path: the 1M-call loader is shared)

from synapse_nb.events import ToolCallFinished, utcnow  # noqa: E402
from synapse_nb.history.reader import History  # noqa: E402
from synapse_nb.history.recorder import Recorder  # noqa: E402
from synapse_nb.history.store import HistoryStore  # noqa: E402
from synapse_nb.types import ContentBlock, ToolCall, ToolResult  # noqa: E402

READER = """
import sys
from pathlib import Path
from synapse_nb.history.reader import History
h, stop, n = History(sys.argv[1]), Path(sys.argv[2]), 0
while not stop.exists():
    h.sql("SELECT tool, count(*) FROM tool_calls GROUP BY tool")
    n += 1
    if n == 1:
        print("ready", flush=True)
print(n)
"""

GROUP_BY = """
SELECT tool, count(*) AS calls,
       quantile_cont(duration_ms, 0.5) AS p50_ms, quantile_cont(duration_ms, 0.9) AS p90_ms,
       quantile_cont(duration_ms, 0.99) AS p99_ms, avg(CAST(is_error AS INTEGER)) AS error_rate
FROM tool_calls GROUP BY tool ORDER BY calls DESC
"""
LAST_1000 = "SELECT * FROM tool_calls ORDER BY started_at DESC LIMIT 1000"


def event(i: int) -> ToolCallFinished:
    call = ToolCall(f"c{i}", f"demo__{TOOLS[i % 5]}", {"sql": f"SELECT * FROM orders WHERE id = {i}", "limit": 10})
    result = ToolResult((ContentBlock("text", text=f"row {i}: " + "x" * 200),), duration_ms=float(i % 997))
    return ToolCallFinished(
        session_id=f"s{i // 100}",
        call=call,
        server="demo",
        tool=TOOLS[i % 5],
        approval="auto",
        started_at=utcnow(),
        duration_ms=float(i % 997),
        result=result,
        message_id=f"m{i}",
    )


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_writes(work: Path, n: int) -> list[tuple[str, str, str, str, str]]:
    events = [event(i) for i in range(n)]
    path = work / "writes.duckdb"
    store = HistoryStore.open(path, strict=True)
    stop = work / "stop-reader"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(path), str(stop)], env=env, stdout=subprocess.PIPE, text=True
    )
    if reader.stdout is None or reader.stdout.readline().strip() != "ready":  # it reads before we write
        raise RuntimeError("the reader process did not start")
    per_call: list[float] = []
    start = time.perf_counter()
    for e in events:
        t = time.perf_counter()
        store.record(e)
        per_call.append(time.perf_counter() - t)
    recorded = time.perf_counter() - start
    store.flush(timeout=120)
    durable = time.perf_counter() - start
    store.close()
    stop.touch()
    reads = int(reader.communicate(timeout=120)[0].strip())
    if len(History(path).tool_calls(limit=n)) != n:
        raise RuntimeError("events were lost")

    # Baseline: the naive recorder, one autocommit INSERT per event on a kept-open connection.
    rows = [row for e in events for _, row in Recorder().rows(e)]
    base = work / "baseline.duckdb"
    HistoryStore.open(base, strict=True).close()
    import json

    cols = list(rows[0])
    sql = f"INSERT INTO tool_calls ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
    con = duckdb.connect(str(base))
    start = time.perf_counter()
    for row in rows:
        con.execute(sql, [json.dumps(v) if isinstance(v, dict) else v for v in row.values()])
    baseline = time.perf_counter() - start
    con.close()

    per_call.sort()
    p50, p99 = per_call[len(per_call) // 2] * 1e6, per_call[int(len(per_call) * 0.99)] * 1e6
    return [
        (
            f"record() {n:,} events (reader ran {reads} queries)",
            f"{n / recorded:,.0f} ev/s",
            f"{n / baseline:,.0f} ev/s",
            f"{(n / recorded) / (n / baseline):.1f}x",
            "-",
        ),
        ("record() latency p50 / p99", f"{p50:.0f} / {p99:.0f} us", f"{baseline / n * 1e6:.0f} us", "-", "< 1000 us"),
        (
            "recorded + flushed into DuckDB",
            f"{n / durable:,.0f} ev/s",
            f"{n / baseline:,.0f} ev/s",
            f"{(n / durable) / (n / baseline):.1f}x",
            "-",
        ),
    ]


def bench_reads(work: Path, n: int, repeat: int) -> list[tuple[str, str, str, str, str]]:
    path = work / "calls.duckdb"
    load_calls(path, n)
    store = HistoryStore.open(path, strict=True)
    for i in range(1000):  # some events still in the spool: reads must merge them
        store.record(event(n + i))
    h = History(path)
    ours_group = median_time(lambda: h.sql(GROUP_BY), repeat)
    ours_last = median_time(lambda: h.tool_calls(limit=1000), repeat)
    total = int(h.sql("SELECT count(*) AS n FROM tool_calls").n[0])
    store.close()

    con = duckdb.connect(str(path), read_only=True)
    base_group = median_time(lambda: con.sql(GROUP_BY).to_arrow_table().to_pandas(), repeat)
    base_last = median_time(lambda: con.sql(LAST_1000).to_arrow_table().to_pandas(), repeat)
    con.close()
    return [
        (
            f"GROUP BY tool, quantile_cont over {total:,} calls",
            f"{ours_group * 1000:.0f} ms",
            f"{base_group * 1000:.0f} ms",
            f"{ours_group / base_group:.1f}x",
            "< 1 s",
        ),
        (
            f"last 1,000 of {total:,} calls as a DataFrame",
            f"{ours_last * 1000:.0f} ms",
            f"{base_last * 1000:.0f} ms",
            f"{ours_last / base_last:.1f}x",
            "< 1 s",
        ),
    ]


def table(rows: list[tuple[str, str, str, str, str]]) -> str:
    head = ("measurement", "synapse_nb", "baseline", "ratio", "target")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]

    def line(r: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"

    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny sizes, for the test suite")
    parser.add_argument("--events", type=int, help="events to record (default 20,000; --small 300)")
    parser.add_argument("--calls", type=int, help="tool calls to query (default 1,000,000; --small 5,000)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    events = args.events or (300 if args.small else 20_000)
    calls = args.calls or (5_000 if args.small else 1_000_000)
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        rows = bench_writes(Path(tmp), events) + bench_reads(Path(tmp), calls, 3 if args.small else 7)
    out = table(rows)
    print(out)
    if args.markdown:
        args.markdown.write_text(f"# bench_history\n\n{out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
