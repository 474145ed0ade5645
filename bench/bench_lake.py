"""Row 13: the shared Parquet lake: publishing 1,000,000 tool calls, and a GROUP BY over a lake of them.

- 13a `History.publish(LAKE)` of a history file holding 1,000,000 tool calls over 30 days into an empty
  lake (each round a fresh lake, so every round publishes all of them); baseline: DuckDB writing the
  same rows from the same file as the same hive-partitioned Parquet (one `COPY ... PARTITION_BY
  (date)`, connection opened inside the timing as publish opens the file).
- 13b the GROUP BY of row 9b through `synapse_nb.history(LAKE).sql(...)` over that lake (views over
  `read_parquet(..., union_by_name = true)`); baseline: the same query on a DuckDB connection already
  open on the history file, in a helper process (as row 9b).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import duckdb
from _common import Measure, Row, Size, bench_dir, fmt_rate, fmt_seconds, interleaved, median
from bench_store import GROUP_BY, _OpenConnection
from bench_store import load_calls as store_load_calls

from synapse_nb.history.lake_dir import relation_files
from synapse_nb.history.reader import History, history

__all__ = ["row_lake"]

DAYS = 30


def load_calls(path: Path, n: int) -> None:
    """n tool calls spread evenly over DAYS days, in bulk (the write path is row 9a)."""
    store_load_calls(path, n, step_us=DAYS * 86_400_000_000 // max(n, 1))


def _copy_partitioned(path: Path, dest: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute(
            f"COPY (SELECT *, CAST(started_at AS DATE) AS date FROM tool_calls) TO '{dest}' "
            "(FORMAT parquet, PARTITION_BY (date), COMPRESSION zstd)"
        )


def row_lake(size: Size) -> list[Row]:
    n, rounds, query_rounds = size.pick((10_000, 1, 2), (1_000_000, 3, 9))
    work = bench_dir()
    path = work / "row13-calls.duckdb"
    t0 = time.perf_counter()
    load_calls(path, n)
    load = time.perf_counter() - t0
    counter = iter(range(1000))
    lakes: list[Path] = []

    def fresh(kind: str) -> Path:
        target = work / f"{kind}-{next(counter)}"
        lakes.append(target)
        return target

    def clean() -> None:  # keep the scratch disk small: one lake of each kind is enough afterwards
        for old in lakes[:-2]:
            shutil.rmtree(old, ignore_errors=True)

    published: list[int] = []

    def ours() -> None:
        published.append(History(path).publish(fresh("lake")).rows["tool_calls"])

    s = interleaved({"base": lambda: _copy_partitioned(path, fresh("copy")), "publish": ours}, rounds)
    clean()
    if published[-1] != n:
        raise RuntimeError(f"publish wrote {published[-1]:,} of {n:,} tool calls")
    lake = next(p for p in reversed(lakes) if p.name.startswith("lake-"))
    parts = relation_files(lake, "tool_calls")
    size_mb = sum(p.stat().st_size for p in parts) / 2**20

    team = history(lake)
    baseline = _OpenConnection(path)
    try:
        q = interleaved({"base": lambda: baseline.time("group"), "lake": lambda: team.sql(GROUP_BY)}, query_rounds)
        got = team.sql(GROUP_BY)
    finally:
        baseline.close()
    if int(got["calls"].sum()) != n:
        raise RuntimeError(f"the lake GROUP BY counted {int(got['calls'].sum()):,} of {n:,} calls")
    q["base"] = baseline.samples["group"][1:]
    with duckdb.connect() as con:  # for the note: the same query straight on the files, no views
        raw = f"read_parquet('{lake}/relation=tool_calls/**/*.parquet', hive_partitioning = true)"
        r = interleaved({"raw": lambda: con.sql(GROUP_BY.replace("FROM tool_calls", f"FROM {raw}")).fetchall()},
                        query_rounds)

    pub, base = median(s["publish"]), median(s["base"])
    lake_q, base_q = median(q["lake"]), median(q["base"])
    return [
        Row(
            "13a", f"publishing {n:,} tool calls (over {DAYS} days) to an empty Parquet lake",
            Measure("DuckDB COPY ... PARTITION_BY (date)", base), Measure("History.publish(LAKE)", pub),
            "< 10 s (absolute)", pub < 10.0,
            note=f"{fmt_rate(n, pub, 'rows')} published vs {fmt_rate(n, base, 'rows')} for the bare COPY; "
                 f"{len(parts)} parts ({n // 500_000 + (n % 500_000 > 0)} ranges of at most 500,000 rows, one part "
                 f"per date each), {size_mb:,.0f} MiB zstd; publish also claims and commits the watermark (two "
                 f"opens of the file) and fsyncs each part; file bulk-loaded in {fmt_seconds(load)}; median of "
                 f"{rounds}",
            why="" if pub < 10.0 else
                f"{fmt_seconds(pub)}: one COPY per (range, date) scans the range again (history/lake.py _write)",
        ),
        Row(
            "13b", f"GROUP BY tool over a lake of {n:,} tool calls (row 9b's query)",
            Measure("history file, DuckDB connection already open", base_q),
            Measure("synapse_nb.history(LAKE).sql()", lake_q),
            "< 1 s (absolute)", lake_q < 1.0,
            note=f"{len(parts)} parts; the same query straight on read_parquet(...) in an open DuckDB: "
                 f"{fmt_seconds(median(r['raw']))} (the rest is the lake reader's views and the DataFrame); "
                 f"median of {query_rounds}",
            why="" if lake_q < 1.0 else
                f"{fmt_seconds(lake_q)}: reading the Parquet parts (history/lake_reader.py)",
        ),
    ]
