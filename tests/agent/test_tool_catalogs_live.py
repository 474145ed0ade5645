"""The eval's catalog snapshots (tests/agent/tool_search_eval/catalogs) still say what the ten live servers say:
a pinned server whose tools changed fails here, and `scripts/snapshot_tool_catalogs.py` writes them again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.catalog_servers import SERVERS, catalog_of, connected, read_catalogs, server_entries

pytestmark = [pytest.mark.anyio, pytest.mark.process, pytest.mark.node, pytest.mark.timeout(600)]


async def test_the_snapshots_match_the_live_servers(tmp_path: Path) -> None:
    snapshots = read_catalogs()
    with server_entries(tmp_path) as entries:
        async with connected(entries) as hub:
            live = {name: catalog_of(hub, name, tmp_path) for name in SERVERS}
    for name in SERVERS:
        assert live[name] == snapshots[name], (
            f"{name}'s catalog changed: run scripts/snapshot_tool_catalogs.py and check the eval still passes")
    assert sum(len(c["tools"]) for c in live.values()) >= 60
