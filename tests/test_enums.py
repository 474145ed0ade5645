"""Each enum of the settings is written once: the parser, the magics' choices and help, the other layers and the
README's configuration section all take it from that one Literal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import synapse_nb
from synapse_nb.agent.approval import MODES
from synapse_nb.mcp_client.logs import LEVELS
from synapse_nb.notebook.commands.args import ASK_OPTIONS, CONNECT_OPTIONS
from synapse_nb.notebook.commands.options import OptionSet
from synapse_nb.notebook.turns.view import FORMATS
from synapse_nb.oauth_settings import GRANTS, TOKEN_AUTH_METHODS
from synapse_nb.server_config import APPROVE_MODES, CHOICES, LOG_LEVELS

PACKAGE = Path(synapse_nb.__file__).parent
README = " ".join((PACKAGE.parent / "README.md").read_text(encoding="utf-8").split())
ENUMS = {**CHOICES, "format": FORMATS, "grant": GRANTS, "token_endpoint_auth_method": TOKEN_AUTH_METHODS}


def test_other_layers_take_the_one_list() -> None:
    assert MODES is APPROVE_MODES
    assert LEVELS is LOG_LEVELS


@pytest.mark.parametrize("key", sorted(ENUMS))
def test_no_module_writes_an_enum_out_again(key: str) -> None:
    """Its values written side by side as string literals (a Literal, a tuple, a set) appear in one module."""
    values = ENUMS[key]
    written = re.compile(r"""["']\s*,\s*["']""".join(re.escape(v) for v in values[:3]))
    where = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if written.search(p.read_text("utf-8"))]
    assert len(where) == 1, f"{key}'s values are written in {where}"


@pytest.mark.parametrize("key", sorted(ENUMS))
def test_the_readme_lists_every_value(key: str) -> None:
    listed = ", ".join(f"`{v}`" for v in ENUMS[key])
    alternatives = "|".join(ENUMS[key])
    assert listed in README or alternatives in README.replace("\\|", "|"), f"README does not list {key}: {listed}"


@pytest.mark.parametrize(("options", "flag", "key"), [
    (ASK_OPTIONS, "--approve", "approve"), (ASK_OPTIONS, "--format", "format"),
    (CONNECT_OPTIONS, "--approve", "approve"), (CONNECT_OPTIONS, "--transport", "transport"),
    (CONNECT_OPTIONS, "--log-level", "log_level"), (CONNECT_OPTIONS, "--sampling", "sampling"),
    (CONNECT_OPTIONS, "--elicitation", "elicitation"),
])
def test_the_magics_choices_and_help_are_the_list(options: OptionSet, flag: str, key: str) -> None:
    option = next(o for o in options.options if o.flag == flag)
    assert tuple(option.choices) == ENUMS[key]
