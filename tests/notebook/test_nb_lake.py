"""The lake in the notebook: `publish_to` publishes after each turn off the loop, `%synapse publish` now;
`%synapse sql --lake` reads it; `%synapse lake compact|expire|migrate` look after it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

import synapse_nb


def _turn_ids(lake: Path) -> list[str]:
    return sorted(synapse_nb.history(lake).sql("SELECT turn_id FROM turns").turn_id)

Script = Callable[[Any], str]
WAIT = 60.0


@pytest.mark.slow  # a lake's whole cycle: seconds of pyiceberg; in `make test`, not `make quick`
def test_publish_to_publishes_each_turn_in_the_background(ip: Any, script: Script, tmp_path: Path) -> None:
    lake = tmp_path / "team lake"  # a space: the path is quoted in the magics below
    model = script(["first answer", "second answer"])
    ip.run(f"%config SynapseMagics.publish_to = {str(lake)!r}")
    publisher = ip.state.router.lake_publisher
    assert publisher is not None
    assert publisher.dest.folder == lake

    ip.cell(f"synapse --model {model}", "first question")
    assert publisher.wait(WAIT)
    assert publisher.problem is None
    assert publisher.last is not None
    assert publisher.last.rows["turns"] == 1
    assert publisher._thread is not None
    assert publisher._thread is not threading.current_thread()  # not on the caller's (the loop's) thread
    ip.cell(f"synapse --model {model}", "second question")
    assert publisher.wait(WAIT)
    assert publisher.last.rows["turns"] == 1  # only the new turn
    assert publisher.last.rows["sessions"] == 0

    turns = ip.line("synapse", f"sql --lake '{lake}' SELECT prompt, status FROM turns ORDER BY started_at")
    assert turns.to_dict("records") == [{"prompt": "first question", "status": "finished"},
                                        {"prompt": "second question", "status": "finished"}]
    frame = ip.cell(f'synapse_sql --lake "{lake}" --out team', "SELECT count(*) AS n FROM messages")
    assert isinstance(frame, pd.DataFrame)
    assert ip.ns["team"].n[0] == 4
    assert len(synapse_nb.history(lake).sessions()) == 1

    ip.run("%config SynapseMagics.publish_to = ''")
    assert ip.state.router.lake_publisher is None
    published = _turn_ids(lake)
    ip.cell(f"synapse --model {script(['third'])}", "third question")
    assert _turn_ids(lake) == published  # off: nothing published any more
    now = ip.line("synapse", f"publish '{lake}'")  # by hand: the third turn, once
    assert now.rows["turns"] == 1
    assert len(_turn_ids(lake)) == 3
    assert ip.line("synapse", f"publish '{lake}'").total == 0
    compacted = ip.line("synapse", f"lake compact '{lake}'")
    assert compacted.files["turns"][1] <= compacted.files["turns"][0]
    expired = ip.line("synapse", f"lake expire '{lake}' --older-than 0s")
    assert expired.snapshots["turns"] >= 2
    assert len(_turn_ids(lake)) == 3


def test_a_failing_publish_is_one_warning_and_never_breaks_a_cell(
    ip: Any, script: Script, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_lake = tmp_path / "photos"
    not_a_lake.mkdir()
    (not_a_lake / "cat.jpg").write_bytes(b"\xff")
    ip.run(f"%config SynapseMagics.publish_to = {str(not_a_lake)!r}")
    publisher = ip.state.router.lake_publisher
    model = script(["one", "two"])
    with caplog.at_level(logging.WARNING, logger="synapse_nb.history"):
        ip.cell(f"synapse --model {model}", "q1")
        assert publisher.wait(WAIT)
        ip.cell(f"synapse --model {model}", "q2")
        assert publisher.wait(WAIT)
    assert ip.ns["_synapse"].text == "two"  # the cells worked
    warnings = [r.getMessage() for r in caplog.records if r.name == "synapse_nb.history"]
    assert len(warnings) == 1  # said once, not per turn
    assert warnings[0].startswith(f"history was not published to {not_a_lake}: ")
    assert "holds other files" in warnings[0]
    assert "\n" not in warnings[0]
    assert sorted(p.name for p in not_a_lake.iterdir()) == ["cat.jpg"]


def test_bad_lake_options_are_one_line(ip: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    ip.run(f"%config SynapseMagics.publish_to = {str(a_file)!r}")
    assert "publish_to must be a lake (a folder, a URI or a lake config .json), not the file" in caplog.text
    assert ip.state.router.lake_publisher is None
    ip.run("%config SynapseMagics.publish_to = 's3://team/lake'")
    assert "has no catalog: set SYNAPSE_LAKE_CATALOG" in caplog.text
    assert ip.state.router.lake_publisher is None
    with pytest.raises(UsageError, match=r"is not a lake .* publish into one first"):
        ip.line("synapse", f"sql --lake {a_file} SELECT 1")
    with pytest.raises(UsageError, match="has no catalog: set SYNAPSE_LAKE_CATALOG"):
        ip.line("synapse", "publish s3://team/lake")
    with pytest.raises(UsageError, match="no lake named: give one"):
        ip.line("synapse", "publish")
    with pytest.raises(UsageError, match="unknown action 'shrink'"):
        ip.line("synapse", "lake shrink")
    with pytest.raises(UsageError, match="--older-than takes an age like 7d"):
        ip.line("synapse", f"lake expire {tmp_path} --older-than soon")
    with pytest.raises(UsageError, match="not a Parquet lake of the retired format"):
        ip.line("synapse", f"lake migrate {tmp_path / 'nothing'} {tmp_path / 'new'}")
    with pytest.raises(UsageError, match="--lake needs a lake"):
        ip.line("synapse", "sql --lake")
    with pytest.raises(UsageError, match="missing query"):
        ip.line("synapse", f"sql --lake {tmp_path}")
    with pytest.raises(UsageError, match=r"^%%synapse_sql: --lake needs a value; see %synapse help$"):
        ip.cell("synapse_sql --lake", "SELECT 1")


def test_publish_to_from_the_config_applies_at_load(ip: Any, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ip.run(f"%config SynapseMagics.publish_to = {str(lake)!r}")  # kept in the shell's config, like ipython_config.py
    ip.run("%unload_ext synapse_nb")
    ip.run("%load_ext synapse_nb")
    from synapse_nb.notebook.extension import get_state

    state = get_state(ip.shell)
    assert state is not None
    assert state.router.lake_publisher is not None
    assert state.router.lake_publisher.dest.folder == lake
