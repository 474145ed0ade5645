"""`%mcp` against the PostgreSQL reference server (npm) and a real PostgreSQL: the password of its database URL
and a `--api-token` on its command line never reach the notebook (listing text and HTML, the inspector, errors,
logs, the history file), however the server was connected (a magic or a config file entry)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

import synapse_nb
from tests.support import db_services
from tests.support.npm_servers import node_for

TOKEN = "tok_live_4f9a8c7d6e5b"


@pytest.fixture(scope="module")
def pg() -> Iterator[db_services.Postgres]:
    with db_services.postgres() as server:
        yield server


def _leaks(text: str) -> list[str]:
    return [s for s in (db_services.READER_PASSWORD, TOKEN) if s in text]


@pytest.mark.process
def test_a_database_url_and_token_on_the_command_line_are_masked_everywhere(
    ip: Any, pg: db_services.Postgres, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="synapse_nb")
    node = node_for(db_services.POSTGRES_SERVER)
    ip.line("mcp", f"connect pg -- {node} {db_services.POSTGRES_SERVER} {pg.url} --api-token {TOKEN}")
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"pgfile": {
        "command": node, "args": [str(db_services.POSTGRES_SERVER), pg.url, f"--api-token={TOKEN}"]}}}))
    ip.line("mcp", f"connect --config {config}")
    with pytest.raises(UsageError) as failed:  # a command that cannot start: its error shows the command line
        ip.line("mcp", f"connect pgbad -- {tmp_path}/no-such-node {pg.url} --api-token {TOKEN}")
    call = ip.line("mcp", 'call pg.query sql="SELECT customer FROM orders ORDER BY id"')
    assert "grace" in repr(call)  # the server works with the password it was given

    listing = ip.line("mcp", "list")
    endpoints = dict(zip(listing["server"], listing["endpoint"], strict=True))
    assert "postgresql://reader:[REDACTED]@127.0.0.1" in endpoints["pg"]
    assert "--api-token [REDACTED]" in endpoints["pg"]
    assert "--api-token=[REDACTED]" in endpoints["pgfile"]
    inspector = ip.line("mcp", "inspect pg")
    shown = [listing.to_string(), listing.to_html(), str(listing._repr_html_()), str(failed.value), repr(call),
             ip.published.text(), ip.published.markdown(), json.dumps([b for b, _, _ in ip.published.items],
                                                                    default=str),
             repr(ip.state.hub.server("pgbad")), _widget_text(inspector), caplog.text]
    assert [_leaks(text) for text in shown] == [[]] * len(shown)
    assert str(failed.value).startswith("ServerStartError: %mcp connect: pgbad failed to start")  # no usage error

    events = synapse_nb.history().sql("SELECT * FROM server_events").to_json(date_format="iso")
    assert "pgfile" in events
    assert _leaks(events) == []


def _widget_text(widget: Any) -> str:
    """Every string trait of a widget tree (what a saved notebook's widget state would hold)."""
    seen: list[str] = []

    def walk(w: Any) -> None:
        for name in getattr(w, "keys", []):
            value = getattr(w, name, None)
            if isinstance(value, str):
                seen.append(value)
            elif isinstance(value, list | tuple):
                for child in value:
                    if hasattr(child, "keys"):
                        walk(child)
    walk(widget)
    return "\n".join(seen)
