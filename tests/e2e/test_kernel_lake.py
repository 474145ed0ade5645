"""`publish_to` in a real kernel: a turn with an MCP tool call lands in the lake, published off the kernel's loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import synapse_nb
from tests.support import tools_server
from tests.support.kernel_session import running_kernel

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

DEMO = tools_server.COMMAND


def test_a_turn_is_published_to_the_lake_in_the_background(tmp_path: Path) -> None:
    lake = tmp_path / "team-lake"
    with running_kernel(tmp_path) as k:
        k.ok(f"import sys\n%load_ext synapse_nb\n%mcp connect demo -- {DEMO}")
        k.ok(f"%config SynapseMagics.publish_to = {str(lake)!r}")
        turn = k.ok("%%synapse\nWhat are the top products by revenue?")  # the demo model calls demo__query
        assert turn.stderr == ""
        report = k.ok(
            "import json, threading\n"
            "from synapse_nb.notebook.extension import get_state\n"
            "_p = get_state(get_ipython()).router.lake_publisher\n"
            "print(json.dumps({'answered': _p.wait(60), 'problem': _p.problem, 'rows': _p.last.rows,\n"
            "                  'thread': _p._thread.name, 'main': threading.current_thread().name}))"
        )
        got = json.loads(report.stdout)
        assert got["answered"] is True
        assert got["problem"] is None
        assert got["rows"]["turns"] == 1
        assert got["rows"]["tool_calls"] == 1
        assert got["thread"].startswith("synapse-lake")
        assert got["thread"] != got["main"]
        rows = k.ok(f"%synapse sql --lake {lake} SELECT tool, server FROM tool_calls")
        assert "query" in rows.text()

    team = synapse_nb.history(lake)
    assert team.tool_calls()[["server", "tool"]].to_dict("records") == [{"server": "demo", "tool": "query"}]
    assert team.turns().prompt.tolist() == ["What are the top products by revenue?"]
