"""MCP tasks in the history: their creation and status changes recorded as `task_events`, folded by the `tasks`
view into one row per task (the same view in the file and in readers, before and after ingest); arguments
masked like a tool call's; a finished task's duration is the task's, by the server's clock."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from synapse_nb.errors import HistoryError
from synapse_nb.events import TaskCreated, TaskStatusChanged
from synapse_nb.history.catalog import view_query
from synapse_nb.history.store import HistoryStore
from synapse_nb.task_state import TaskState

T0 = dt.datetime(2026, 11, 28, 9, 0, 0)
SECRET = "sk-live-0123456789abcdefghijklmnop"


def _state(task_id: str, status: str, seconds: float, message: str | None = None) -> TaskState:
    return TaskState(task_id=task_id, server="fm", tool="slow", form="2026-07-28", status=status,  # type: ignore[arg-type]
                     status_message=message, created_at=T0, updated_at=T0 + dt.timedelta(seconds=seconds),
                     poll_interval_ms=300)


def _record_two_tasks(store: HistoryStore) -> None:
    seen = dt.datetime(2026, 11, 28, 9, 5, 0)  # the client saw it end five minutes late: the duration is not that
    store.record(TaskCreated(task=_state("t-1", "working", 0), arguments={"seconds": 20, "api_key": SECRET},
                             session_id="s-1", cell="In[4]", tool_call_id="call-1", at=T0))
    store.record(TaskStatusChanged(task=_state("t-1", "input_required", 5, "asks a name"), tool_call_id="call-1",
                                   at=T0 + dt.timedelta(seconds=6)))
    store.record(TaskStatusChanged(task=_state("t-1", "completed", 20), tool_call_id="call-1", at=seen))
    store.record(TaskCreated(task=_state("t-2", "working", 0), arguments={}, cell="In[5]", at=T0))


def _check(frame: object) -> None:
    import pandas as pd

    assert isinstance(frame, pd.DataFrame)
    rows = {r["task_id"]: r for r in frame.to_dict("records")}
    assert set(rows) == {"t-1", "t-2"}
    done = rows["t-1"]
    assert (done["server"], done["tool"], done["form"]) == ("fm", "slow", "2026-07-28")
    assert (done["status"], done["session_id"], done["cell"], done["tool_call_id"]) == (
        "completed", "s-1", "In[4]", "call-1")
    assert done["duration_ms"] == 20_000  # created to finished by the server's clock, not the last poll
    assert SECRET not in str(done["arguments"])
    assert '"seconds": 20' in str(done["arguments"]).replace(":20", ": 20")
    running = rows["t-2"]
    assert running["status"] == "working"
    assert pd.isna(running["finished_at"])


def test_tasks_are_recorded_and_folded_into_one_row_each(store: HistoryStore) -> None:
    _record_two_tasks(store)
    history = store.history()
    _check(history.tasks())  # from the spool, not yet ingested
    assert list(history.tasks(open_only=True)["task_id"]) == ["t-2"]
    store.flush()
    _check(history.tasks())  # ingested
    events = history.sql("SELECT event, status FROM task_events WHERE task_id = 't-1' ORDER BY \"at\"")
    assert [tuple(r) for r in events.to_numpy()] == [
        ("created", "working"), ("status", "input_required"), ("status", "completed")]


def test_the_file_has_the_same_tasks_view(store: HistoryStore) -> None:
    _record_two_tasks(store)
    store.flush()
    from_reader = store.history().tasks().sort_values("task_id").reset_index(drop=True)
    store.close()
    with duckdb.connect(str(store.path), read_only=True) as con:
        from_file = con.sql("SELECT * FROM tasks ORDER BY task_id").df()
    assert list(from_file.columns) == list(from_reader.columns)
    assert from_file.astype(str).to_dict("records") == from_reader.astype(str).to_dict("records")


def test_a_published_lake_has_the_tasks_too(store: HistoryStore, tmp_path: Path) -> None:
    import synapse_nb

    _record_two_tasks(store)
    store.flush()
    store.close()
    lake = tmp_path / "lake"
    published = synapse_nb.history(store.path).publish(lake)
    assert published.rows["task_events"] == 4
    _check(synapse_nb.history(lake).tasks())


def test_readers_take_the_tasks_view_from_the_migration_that_defines_it_last(tmp_path: Path) -> None:
    """One definition of the view: migration 0010 in the file, the same text in readers (and a later migration
    that redefines it wins in both)."""
    assert view_query("tasks").startswith("SELECT")
    assert view_query("tasks").rstrip().endswith("GROUP BY task_id")
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE t (x INT);\nCREATE VIEW v AS SELECT x FROM t;\n")
    (tmp_path / "0002_b.sql").write_text("-- v counts now\nCREATE OR REPLACE VIEW v AS\nSELECT count(*) AS n FROM t;\n")
    assert view_query("v", tmp_path) == "SELECT count(*) AS n FROM t"
    with pytest.raises(HistoryError, match="no migration creates a view named 'w'"):
        view_query("w", tmp_path)
