"""Where the hold budget is set (issue 35): per cell, per server (connect option, config entry), per kernel."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError
from traitlets import TraitError

from synapse_nb.notebook.commands.args import parse_ask, parse_connect
from synapse_nb.notebook.turns.holding import hold_policy
from synapse_nb.server_config import ServerConfig, parse_server


def test_the_cell_option_takes_tokens_and_refuses_anything_else() -> None:
    assert parse_ask("--hold-over 8,000").hold_over == 8000
    assert parse_ask("").hold_over is None
    with pytest.raises(UsageError, match=r"--hold-over.*not a number of tokens"):
        parse_ask("--hold-over lots")
    with pytest.raises(UsageError, match="0 or more"):
        parse_ask("--hold-over -5")


def test_a_server_takes_its_budget_from_connect_or_its_config_entry() -> None:
    config = parse_connect(["db", "--hold-over", "0", "--", "python", "-m", "server"])
    assert isinstance(config, ServerConfig)
    assert config.hold_over == 0
    assert parse_server("db", {"command": "x", "hold_over": 500}).hold_over == 500
    assert "hold_over must be a number of tokens" in (parse_server("db", {"command": "x", "hold_over": -1}).problem
                                                     or "")
    with pytest.raises(UsageError, match="--hold-over applies to one server"):
        parse_connect(["--hold-over", "10"])


class _Hub:
    servers = (type("Info", (), {"name": "db"})(), type("Info", (), {"name": "web"})())

    def server_config(self, name: str) -> ServerConfig:
        return ServerConfig(name, command="x", hold_over=0 if name == "db" else None)


def test_the_cell_wins_then_the_server_then_the_setting() -> None:
    hub: Any = _Hub()
    policy = hold_policy(hub, 4000)
    assert (policy.budget("db"), policy.budget("web"), policy.budget(None)) == (0, 4000, 4000)
    cell = hold_policy(hub, 4000, 100)
    assert (cell.budget("db"), cell.budget("web")) == (100, 100)


def test_the_setting_refuses_a_negative_budget(ip: Any) -> None:
    with pytest.raises(TraitError, match="hold_over must be a number of tokens >= 0"):
        ip.magics.hold_over = -1
    ip.magics.hold_over = 0
    assert ip.magics.settings().hold_over == 0
