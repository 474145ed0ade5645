"""The negotiated protocol version of each server, in `%mcp list` and the inspector's server card: a Python SDK
server speaks the stateless 2026-07-28 revision, the npm reference server 2025-11-25 (a session)."""

from __future__ import annotations

from typing import Any

import pytest

from synapse_nb.mcp_client.info import ServerInfo
from synapse_nb.notebook.widgets.server_panel import card_html
from tests.notebook.test_nb_task_tools import connect_everything
from tests.support import tools_server


@pytest.mark.process
@pytest.mark.node
def test_mcp_list_shows_the_negotiated_protocol_of_each_server(ip: Any) -> None:
    ip.run("import sys")
    ip.line("mcp", f"connect demo -- {tools_server.COMMAND}")
    connect_everything(ip)
    frame = ip.line("mcp", "list").set_index("server")
    assert frame.loc["demo", "protocol"] == "2026-07-28 stateless"
    assert frame.loc["everything", "protocol"] == "2025-11-25"
    assert list(frame.columns).index("protocol") == list(frame.columns).index("transport") + 1


def test_the_server_card_names_the_protocol() -> None:
    info = ServerInfo(name="demo", transport="stdio", state="connected", protocol_version="2026-07-28",
                      stateless=True)
    assert "protocol <b>2026-07-28 stateless</b>" in card_html("demo", info)
    older = ServerInfo(name="old", transport="http", state="connected", protocol_version="2025-11-25", stateless=False)
    assert "protocol <b>2025-11-25</b>" in card_html("old", older)
    never = ServerInfo(name="bad", transport="stdio", state="failed")
    assert never.protocol == ""
    assert "protocol" not in card_html("bad", never)
