"""Real processes: three publishers write one lake at once, repeatedly, while a fourth queries it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

import synapse_nb
from synapse_nb.history.lake_dir import ensure_lake, parse_part, relation_files
from synapse_nb.history.reader import History

ROUNDS = 8
N = 50  # tool calls per round per publisher

pytestmark = [pytest.mark.slow, pytest.mark.process]


def _spawn(repo_root: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(repo_root), PYTHONWARNINGS="error")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.history.lake_proc", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 150) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out


def test_three_publishers_and_a_querier_lose_nothing_and_double_nothing(repo_root: Path, tmp_path: Path) -> None:
    lake = ensure_lake(tmp_path / "shared-lake").path  # the querier opens it before anything is published
    ready, stop = tmp_path / "ready", tmp_path / "stop"
    querier = _spawn(repo_root, "querier", str(lake), str(stop), str(ready))
    tags = ("alice", "bob", "carol")
    publishers = [
        _spawn(repo_root, "publisher", str(tmp_path / f"{tag}.duckdb"), str(lake), tag, str(ROUNDS), str(N), str(ready))
        for tag in tags
    ]
    try:
        reports = [json.loads(_finish(p)) for p in publishers]
    finally:
        stop.touch()
    seen = json.loads(_finish(querier))

    # Each publish reported exactly the round's new rows; nothing else was in its history.
    for report in reports:
        assert [r["tool_calls"] for r in report] == [N] * ROUNDS
        assert all(sum(r.values()) == N for r in report)
    assert seen["errors"] == []
    assert seen["bad"] == []
    assert seen["queries"] > 0

    expected = {f"{tag}-c{i}" for tag in tags for i in range(ROUNDS * N)}
    files = relation_files(lake, "tool_calls")
    ids: list[str] = []
    for f in files:  # every part is a complete Parquet file on its own
        ids.extend(pq.read_table(f, columns=["tool_call_id"]).column("tool_call_id").to_pylist())
    assert len(ids) == len(expected)
    assert set(ids) == expected
    # one part per publisher, round and date; sources never collide
    assert len(files) == len(tags) * ROUNDS * 2
    assert len({parse_part(f.name)[0] for f in files}) == len(tags)  # type: ignore[index]
    assert not list(lake.rglob("*.tmp"))

    team = synapse_nb.history(lake)
    per_session = team.sql("SELECT session_id, count(*) AS n FROM tool_calls GROUP BY 1 ORDER BY 1")
    assert per_session.to_dict("records") == [{"session_id": t, "n": ROUNDS * N} for t in tags]
    with duckdb.connect() as con:
        ((n, distinct),) = con.execute(
            "SELECT count(*), count(DISTINCT (_source, _seq)) "
            f"FROM read_parquet('{lake}/relation=tool_calls/**/*.parquet')"
        ).fetchall()
    assert n == distinct == len(expected)
    assert seen["last"] <= len(expected)


def test_two_kernels_publishing_one_history_file_at_once_double_nothing(repo_root: Path, tmp_path: Path) -> None:
    """Each may find the other's claimed range pending and redo it: same names, same rows, so still exact."""
    db, lake, done = tmp_path / "shared.duckdb", tmp_path / "lake", tmp_path / "done"
    recorder = _spawn(repo_root, "recorder", str(db), "k", str(ROUNDS), str(N), str(done))
    publishers = [_spawn(repo_root, "republisher", str(db), str(lake), str(done)) for _ in range(2)]
    _finish(recorder)
    reports = [json.loads(_finish(p)) for p in publishers]

    expected = {f"k-c{i}" for i in range(ROUNDS * N)}
    ids = [i for f in relation_files(lake, "tool_calls")
           for i in pq.read_table(f, columns=["tool_call_id"]).column("tool_call_id").to_pylist()]
    assert len(ids) == len(expected)
    assert set(ids) == expected
    assert sum(map(sum, reports)) >= len(expected)  # a redone range is reported by both publishers
    assert History(db).publish(lake).total == 0  # both finished with everything published
    assert not list(lake.rglob("*.tmp"))
