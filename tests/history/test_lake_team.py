"""The team's lake for real: a PostgreSQL catalog (Debian's package) and an S3 warehouse (moto's server), both
on 127.0.0.1, one of each for this file; every test has its own bucket and catalog namespace. Several
processes publishing at once, a publish killed in the middle, an unreachable store, a catalog that goes away:
nothing duplicated, nothing lost, one line each."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import synapse_nb
from synapse_nb.errors import LakeError
from synapse_nb.history.lake_catalog import LakeTables
from synapse_nb.history.lake_spec import LakeSpec, lake_spec
from synapse_nb.history.reader import History
from synapse_nb.history.store import HistoryStore
from synapse_nb.types import ContentBlock, ToolResult
from tests.history.history_events import tool_call
from tests.support.lake_services import Postgres, S3Server, free_port, postgres, s3_server

DAY = dt.datetime(2026, 11, 22, 23, 0, 0)

pytestmark = pytest.mark.process  # servers of their own; not in `make quick`


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    with postgres() as server:
        yield server


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture
def team(pg: Postgres, s3: S3Server, tmp_path: Path) -> LakeSpec:
    """A fresh lake of its own (bucket and namespace) on the shared servers."""
    return LakeSpec(catalog=pg.uri(), warehouse=f"s3://{s3.bucket()}/lake", namespace=f"t{uuid.uuid4().hex[:10]}",
                    storage=s3.storage)


def _config(spec: LakeSpec, path: Path) -> Path:
    """The lake as a team's config file (what the child processes are given)."""
    s3 = {k.removeprefix("s3.").replace("-", "_"): v for k, v in spec.storage.items()}
    path.write_text(json.dumps({"catalog": spec.catalog, "warehouse": spec.warehouse, "namespace": spec.namespace,
                                "s3": s3}))
    return path


def _fill(db: Path, tag: str, first: int, last: int) -> set[str]:
    with HistoryStore.open(db, strict=True) as store:
        for i in range(first, last):
            store.record(tool_call(tag, i, when=DAY + dt.timedelta(hours=2 * (i % 2), seconds=i)))
    return {f"{tag}-c{i}" for i in range(first, last)}


def _ids(spec: LakeSpec) -> list[str]:
    """Every tool call id in the lake's current snapshot (duplicates kept)."""
    table = LakeTables(spec).load("tool_calls")
    if table is None:
        return []
    return [str(i) for i in table.scan(selected_fields=("tool_call_id",)).to_arrow().column(0).to_pylist()]


def _spawn(repo_root: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(repo_root), PYTHONWARNINGS="error")
    return subprocess.Popen([sys.executable, "-m", "tests.history.lake_proc", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], code: int = 0, timeout: float = 170) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == code, err[-3000:]
    return out


def test_a_bucket_named_as_a_uri_with_the_catalog_from_the_environment(
    team: LakeSpec, s3: S3Server, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`publish("s3://bucket/prefix")` writes into the bucket (the retired lake wrote a local folder `s3:`)."""
    monkeypatch.setenv("SYNAPSE_LAKE_CATALOG", team.catalog)
    monkeypatch.setenv("SYNAPSE_LAKE_NAMESPACE", team.namespace)
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    ids = _fill(db_path, "u", 0, 4)
    published = History(db_path).publish(team.warehouse)
    assert published.rows["tool_calls"] == 4
    assert "postgresql+psycopg://127.0.0.1:" in repr(published)  # the catalog shown, its user not
    assert not (Path.cwd() / "s3:").exists()
    bucket = team.warehouse.removeprefix("s3://").split("/")[0]
    assert any(k.endswith(".parquet") for k in s3.keys(bucket))
    assert any(k.endswith(".metadata.json") for k in s3.keys(bucket))
    team_history = synapse_nb.history(team.warehouse)
    assert sorted(team_history.tool_calls().tool_call_id) == sorted(ids)
    assert team_history.sql("SELECT count(*) AS n FROM tool_calls WHERE server = 'demo'").n[0] == 4


@pytest.mark.slow
def test_processes_committing_at_once_put_every_row_in_exactly_once(
    team: LakeSpec, repo_root: Path, tmp_path: Path
) -> None:
    """Two kernels with files of their own publishing round after round, then two publishing one shared file
    at the same moment: their commits race on the same tables (PostgreSQL decides who wins; the losers read
    the marks again). Two at a time: more child processes than cores only slows this down."""
    lake = _config(team, tmp_path / "team-lake.json")
    ready, done = tmp_path / "ready", tmp_path / "done"
    rounds, n = 2, 10
    tags = ("alice", "bob")
    procs = [_spawn(repo_root, "publisher", str(tmp_path / f"{t}.duckdb"), str(lake), t, str(rounds), str(n),
                    str(ready)) for t in tags]
    ready.touch()
    reports = [json.loads(_finish(p)) for p in procs]
    for report in reports:
        assert [r["tool_calls"] for r in report] == [n] * rounds  # each publish: exactly its round's rows

    shared = tmp_path / "shared.duckdb"
    _fill(shared, "k", 0, n)
    done.touch()  # the shared file is complete: each of its two publishers publishes once
    pair = [_spawn(repo_root, "republisher", str(shared), str(lake), str(done)) for _ in range(2)]
    assert sum(sum(json.loads(_finish(p))) for p in pair) == n  # split between them, never both

    expected = {f"{t}-c{i}" for t in tags for i in range(rounds * n)} | {f"k-c{i}" for i in range(n)}
    ids = _ids(team)
    assert len(ids) == len(expected)
    assert set(ids) == expected
    assert History(shared).publish(lake).total == 0
    per_source = synapse_nb.history(lake).sql(
        "SELECT count(*) AS n, count(DISTINCT (_source, _seq)) AS d FROM tool_calls")
    assert per_source.to_dict("records") == [{"n": len(expected), "d": len(expected)}]


@pytest.mark.parametrize("point", ["before-commit", "after-commit"])
def test_a_publish_killed_in_the_middle_is_finished_by_the_next_with_nothing_lost_or_doubled(
    point: str, team: LakeSpec, repo_root: Path, tmp_path: Path, db_path: Path
) -> None:
    lake = _config(team, tmp_path / "lake.json")
    ids = _fill(db_path, "c", 0, 10)
    _finish(_spawn(repo_root, "crash", str(db_path), str(lake), point), code=17)
    assert len(_ids(team)) == {"before-commit": 0, "after-commit": 10}[point]  # never half

    later = _fill(db_path, "c", 10, 13)
    redone = History(db_path).publish(lake)
    assert redone.rows["tool_calls"] == {"before-commit": 13, "after-commit": 3}[point]
    assert sorted(_ids(team)) == sorted(ids | later)  # exact: none lost, none twice
    assert History(db_path).publish(lake).total == 0


def test_an_unreachable_store_is_one_line_and_nothing_is_lost(team: LakeSpec, db_path: Path) -> None:
    ids = _fill(db_path, "u", 0, 3)
    port = free_port()
    down = LakeSpec(catalog=team.catalog, warehouse=team.warehouse, namespace=team.namespace,
                    storage={**team.storage, "s3.endpoint": f"http://127.0.0.1:{port}", "s3.connect-timeout": "2"})
    with pytest.raises(LakeError) as caught:
        History(db_path).publish(down)
    message = str(caught.value)
    assert "\n" not in message
    assert f"its storage {team.warehouse} failed" in message
    assert "check it is reachable, writable and has space" in message
    assert "testing" not in message  # no key in the line
    assert History(db_path).publish(team).rows["tool_calls"] == 3  # the same store reached: everything, once
    assert sorted(_ids(team)) == sorted(ids)


def test_a_full_store_is_one_line_and_nothing_is_lost(db_path: Path, tmp_path: Path) -> None:
    """A folder lake on a 1 MiB disk (a tmpfs) that the next publish's data files do not fit in."""
    if os.geteuid() != 0:
        pytest.skip("mounting the small disk (tmpfs) needs root; CI and `make test` here run as root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=True, timeout=30)
    try:
        lake = disk / "lake"
        ids = _fill(db_path, "f", 0, 3)
        History(db_path).publish(lake)
        with HistoryStore.open(db_path, strict=True) as store:  # ~1.5 MB that no compression shrinks
            for i in range(3, 400):
                noise = ToolResult((ContentBlock("text", text=os.urandom(2048).hex()),), duration_ms=1.0)
                store.record(replace(tool_call("f", i, when=DAY), result=noise))
        with pytest.raises(LakeError) as caught:
            History(db_path).publish(lake)
        message = str(caught.value)
        assert "\n" not in message
        assert f"its storage {lake / 'warehouse'} failed (" in message
        assert "has space" in message
        assert sorted(_ids(lake_spec(lake))) == sorted(ids)  # nothing of the failed publish is visible
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True, timeout=30)
        assert History(db_path).publish(lake).rows["tool_calls"] == 397
        assert sorted(_ids(lake_spec(lake))) == sorted(ids | {f"f-c{i}" for i in range(3, 400)})
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False, timeout=30)


def test_a_catalog_that_goes_away_is_one_line_and_nothing_is_lost(team: LakeSpec, pg: Postgres, db_path: Path) -> None:
    ids = _fill(db_path, "g", 0, 3)
    History(db_path).publish(team)
    more = _fill(db_path, "g", 3, 6)
    pg.stop()
    try:
        with pytest.raises(LakeError) as caught:
            History(db_path).publish(team)
        with pytest.raises(LakeError):
            synapse_nb.history(team).tool_calls()
    finally:
        pg.start()
    message = str(caught.value)
    assert "\n" not in message
    assert "its catalog cannot be used" in message
    assert "check the catalog database is running and reachable" in message
    assert History(db_path).publish(team).rows["tool_calls"] == 3
    assert sorted(_ids(team)) == sorted(ids | more)


def test_publishers_opening_a_new_catalog_at_once_all_open_it(pg: Postgres, s3: S3Server) -> None:
    """The first publishers of a team race to create the catalog's own tables (pyiceberg checks, then creates);
    the losers used to fail with PostgreSQL's duplicate-key error on its type catalog (CI, bench row 13)."""
    import threading

    import psycopg

    failures: list[str] = []
    for attempt in range(3):  # a race: three fresh catalogs, six openers each, all released at once
        database = f"race{uuid.uuid4().hex[:8]}"
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{pg.port}/postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {database}")
        spec = LakeSpec(catalog=pg.uri(database), warehouse=f"s3://{s3.bucket()}/lake", namespace=f"r{attempt}",
                        storage=s3.storage)
        start = threading.Barrier(6)

        def opener(spec: LakeSpec = spec, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                with LakeTables(spec) as tables:
                    assert tables.load("tool_calls") is None
            except LakeError as exc:
                failures.append(str(exc))

        threads = [threading.Thread(target=opener) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads)
    assert failures == []
