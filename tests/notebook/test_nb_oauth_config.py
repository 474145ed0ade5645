"""An `oauth.client_secret` in the config file never shows: not in the settings' repr or str, not in a problem
line or the UsageError of a bad entry, not in `%mcp list`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.config import parse_mcp_config

SECRET = "planted-oauth-secret-5f1e"


def _write(path: Path, entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": entries}), encoding="utf-8")
    return path


def test_a_client_secret_is_in_no_repr_str_or_problem() -> None:
    text = json.dumps({"mcpServers": {
        "good": {"url": "https://x.example/mcp", "oauth": {"client_id": "c", "client_secret": SECRET}},
        "orphan": {"url": "https://x.example/mcp", "oauth": {"client_secret": SECRET}},
        "typo": {"url": "https://x.example/mcp", "oauth": {"client_id": "c", "client_secret": SECRET, "grant": SECRET}},
    }})
    configs = parse_mcp_config(text, environ={})
    good = configs["good"]
    assert good.oauth is not None
    assert good.problem is None
    assert good.oauth.secrets == (SECRET,)  # kept, for the SDK that sends it and the masks
    for shown in (repr(good), str(good), repr(good.oauth), str(good.oauth), good.model_dump_json()):
        assert SECRET not in shown
    for name, says in (("orphan", "oauth.client_secret needs oauth.client_id"), ("typo", "oauth.grant must be one of")):
        problem = configs[name].problem
        assert problem is not None
        assert says in problem
        assert SECRET not in problem
        assert SECRET not in repr(configs[name])


def test_a_client_secret_is_not_in_the_error_or_mcp_list(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    config = _write(tmp_path / "servers.json", {
        "orphan": {"url": "http://127.0.0.1:9/mcp", "oauth": {"client_secret": SECRET}},
        "down": {"url": "http://127.0.0.1:9/mcp", "connect_timeout": 5,
                 "oauth": {"client_id": "c", "client_secret": SECRET, "grant": "client_credentials"}},
    })
    monkeypatch.setenv("SYNAPSE_MCP_CONFIG", str(config))
    ip.line("mcp", "connect")  # both fail: said per server, as servers that fail to start are (DESIGN.md 9)
    said = ip.published.text()
    assert "oauth.client_secret needs oauth.client_id" in said
    assert "down" in said
    listing = ip.line("mcp", "list")
    assert listing is not None
    assert set(listing["server"]) == {"orphan", "down"}
    assert "oauth.client_secret needs oauth.client_id" in listing.to_string()
    for shown in (said, listing.to_string(), ip.published.text(), repr(ip.state.hub.servers)):
        assert SECRET not in shown
