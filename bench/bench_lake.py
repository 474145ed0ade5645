"""Row 13: the Iceberg lake: publishing 1,000,000 tool calls, a GROUP BY over them, and five kernels at once.

- 13a `History.publish(LAKE)` of a history file holding 1,000,000 tool calls over 30 days into an empty
  folder lake (SQLite catalog beside a local warehouse; each round a fresh lake, so every round publishes
  all of them); baseline: a plain pyiceberg append of the same rows as Arrow (read from the file before
  the timing) into a fresh table of the same schema and day partitions in a fresh SQLite catalog.
  Target: at most 1.5x.
- 13b the GROUP BY of row 9b through `synapse_nb.history(LAKE).sql(...)` over that lake (a pyiceberg
  scan of the two columns it names, then DuckDB); baseline: the same query on a DuckDB connection
  already open on the history file, in a helper process (as row 9b). Target: under 1 s.
- 13c five kernels (processes) publishing rounds of tool calls of their own history files into one lake
  on PostgreSQL (catalog) + moto's S3 server (warehouse), both on 127.0.0.1, at the same time; then every
  (`_source`, `_seq`) is checked to be in the lake exactly once. Target: exactly once (the time is shown).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import duckdb
from _common import Measure, Row, Size, bench_dir, fmt_rate, fmt_seconds, interleaved, median
from bench_store import GROUP_BY, _OpenConnection
from bench_store import load_calls as store_load_calls

from synapse_nb.history.lake_catalog import LakeTables, partition_spec, table_schema
from synapse_nb.history.lake_spec import lake_spec
from synapse_nb.history.reader import History, history

__all__ = ["row_lake"]

DAYS = 30
REPO = Path(__file__).resolve().parents[1]


def load_calls(path: Path, n: int) -> None:
    """n tool calls spread evenly over DAYS days, in bulk (the write path is row 9a)."""
    store_load_calls(path, n, step_us=DAYS * 86_400_000_000 // max(n, 1))


def _arrow(path: Path) -> object:
    """The file's tool calls as publish sends them (JSON as text, the bookkeeping columns)."""
    with duckdb.connect(str(path)) as con:
        return con.sql(
            "SELECT * EXCLUDE (arguments, result, _seq), CAST(arguments AS VARCHAR) AS arguments, "
            "CAST(result AS VARCHAR) AS result, 9::INTEGER AS _schema, 'bench' AS _source, _seq FROM tool_calls"
        ).to_arrow_table()


def _plain_append(rows: object, folder: Path) -> None:
    """The baseline: a fresh SQLite catalog, one table like ours, one pyiceberg append."""
    from pyiceberg.catalog.sql import SqlCatalog

    from synapse_nb.history.lake_catalog import conform

    folder.mkdir(parents=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{folder}/catalog.db", warehouse=str(folder / "warehouse"))
    catalog.create_namespace("bench")
    table = catalog.create_table(("bench", "tool_calls"), schema=table_schema("tool_calls"),
                                 partition_spec=partition_spec("tool_calls"))
    table.append(conform(rows, table))  # type: ignore[arg-type]
    catalog.engine.dispose()


def row_lake(size: Size) -> list[Row]:
    n, rounds, query_rounds = size.pick((10_000, 1, 2), (1_000_000, 3, 9))
    work = bench_dir()
    path = work / "row13-calls.duckdb"
    t0 = time.perf_counter()
    load_calls(path, n)
    load = time.perf_counter() - t0
    rows = _arrow(path)
    counter = iter(range(1000))
    lakes: list[Path] = []

    def fresh(kind: str) -> Path:
        target = work / f"{kind}-{next(counter)}"
        lakes.append(target)
        return target

    published: list[int] = []

    def ours() -> None:
        published.append(History(path).publish(fresh("lake")).rows["tool_calls"])

    s = interleaved({"base": lambda: _plain_append(rows, fresh("plain")), "publish": ours}, rounds)
    for old in lakes[:-2]:  # keep the scratch disk small
        shutil.rmtree(old, ignore_errors=True)
    if published[-1] != n:
        raise RuntimeError(f"publish wrote {published[-1]:,} of {n:,} tool calls")
    lake = next(p for p in reversed(lakes) if p.name.startswith("lake-"))
    table = LakeTables(lake_spec(lake)).load("tool_calls")
    files = len(list(table.scan().plan_files())) if table is not None else 0

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

    pub, base = median(s["publish"]), median(s["base"])
    lake_q, base_q = median(q["lake"]), median(q["base"])
    ratio = pub / base if base > 0 else float("inf")
    return [
        Row(
            "13a", f"publishing {n:,} tool calls (over {DAYS} days) to an empty Iceberg lake (folder)",
            Measure("plain pyiceberg append of the same Arrow rows", base), Measure("History.publish(LAKE)", pub),
            "≤ 1.5x", ratio <= 1.5,
            note=f"{fmt_rate(n, pub, 'rows')} published vs {fmt_rate(n, base, 'rows')} appended; {files} data files "
                 f"(one per day); publish also opens and migrates the history file, reads the rows into Arrow, reads "
                 f"the marks and creates the table; file bulk-loaded in {fmt_seconds(load)}; median of {rounds}",
            why="" if ratio <= 1.5 else
                f"{ratio:.2f}x: reading the history file into Arrow (history/lake.py _rows) or the commit",
        ),
        Row(
            "13b", f"GROUP BY tool over an Iceberg lake of {n:,} tool calls (row 9b's query)",
            Measure("history file, DuckDB connection already open", base_q),
            Measure("synapse_nb.history(LAKE).sql()", lake_q),
            "< 1 s (absolute)", lake_q < 1.0,
            note=f"{files} data files; the scan reads only the columns the query names (tool, duration_ms, "
                 f"is_error); median of {query_rounds}",
            why="" if lake_q < 1.0 else f"{fmt_seconds(lake_q)}: the pyiceberg scan (history/lake_reader.py)",
        ),
        _row_team(size, work),
    ]


def _row_team(size: Size, work: Path) -> Row:
    """13c: five publisher processes into PostgreSQL + S3 at once, then the exactly-once check."""
    from tests.support.lake_services import postgres, s3_server

    # small (the test suite's smoke run): two processes are enough to race; the numbers mean nothing there
    procs_n, rounds, per = size.pick((2, 1, 10), (5, 4, 5_000))
    with postgres() as pg, s3_server() as s3:
        config = work / "team-lake.json"
        storage = {k.removeprefix("s3.").replace("-", "_"): v for k, v in s3.storage.items()}
        config.write_text(json.dumps({"catalog": pg.uri(), "warehouse": f"s3://{s3.bucket()}/lake",
                                      "namespace": f"bench{uuid.uuid4().hex[:8]}", "s3": storage}))
        ready = work / "ready"
        env = dict(os.environ, PYTHONPATH=str(REPO))
        procs = [subprocess.Popen(
            [sys.executable, "-m", "tests.history.lake_proc", "publisher", str(work / f"k{i}.duckdb"),
             str(config), f"k{i}", str(rounds), str(per), str(ready)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(procs_n)]
        t0 = time.perf_counter()
        ready.touch()
        outs = [p.communicate(timeout=1800) for p in procs]
        wall = time.perf_counter() - t0
        for p, (_out, err) in zip(procs, outs, strict=True):
            if p.returncode != 0:
                raise RuntimeError(f"a publisher failed: {err[-2000:]}")
        counted = history(config).sql(
            "SELECT count(*) AS n, count(DISTINCT (_source, _seq)) AS d, count(DISTINCT tool_call_id) AS ids "
            "FROM tool_calls")
    expected = procs_n * rounds * per
    n, distinct, ids = (int(counted[c][0]) for c in ("n", "d", "ids"))
    once = n == distinct == ids == expected
    return Row(
        "13c", f"{procs_n} kernels publishing {rounds} rounds of {per:,} tool calls each at once (PostgreSQL + S3)",
        None, Measure(f"{procs_n} publisher processes, wall time", wall),
        "every (source, seq) exactly once", once,
        note=f"{n:,} rows, {distinct:,} distinct (source, seq), {ids:,} distinct tool calls, {expected:,} recorded; "
             "catalog: PostgreSQL (Debian's package) on 127.0.0.1, warehouse: moto's S3 server on 127.0.0.1; each "
             "process imports pyiceberg and creates its history file inside the time",
        why="" if once else f"{n:,} rows for {expected:,} recorded: see history/lake_commit.py",
    )
