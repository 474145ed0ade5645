"""One ServerConfig, one parser, one table: the config file, `%mcp connect` and `McpHub.connect` agree."""

from __future__ import annotations

import json
from typing import Any, Literal, get_args, get_origin

import pytest

from synapse_nb.config import ConfigWarning, ServerConfig, parse_mcp_config
from synapse_nb.errors import ServerStartError
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.notebook.commands.args import parse_connect
from synapse_nb.server_config import (
    APPROVE_MODES,
    CHOICES,
    ELICITATION_MODES,
    LOG_LEVELS,
    SAMPLING_MODES,
    TRANSPORTS,
    choices,
    parse_server,
)

MISSING = "/nonexistent/synapse-test-server"
"""A command that cannot start, so the hub keeps the config it built without running anything."""


def _same(config: ServerConfig) -> dict[str, Any]:
    return config.model_dump(exclude={"source", "display"})


@pytest.mark.anyio
async def test_file_magic_and_hub_keywords_make_the_same_config() -> None:
    entry = {"command": MISSING, "args": ["-m", "srv", "--port", "3"], "env": {"TOKEN": "abc"}, "timeout": 5,
             "approve": "ask", "tools": ["read*"], "sampling": "auto", "elicitation": "decline", "log_level": "info"}
    from_file = parse_mcp_config(json.dumps({"mcpServers": {"srv": entry}}), source="f.json", environ={})["srv"]
    from_magic = parse_connect([
        "srv", "--env", "TOKEN=abc", "--timeout", "5", "--approve", "ask", "--tools", "read*", "--sampling", "auto",
        "--elicitation", "decline", "--log-level", "info", "--", MISSING, "-m", "srv", "--port", "3",
    ])
    assert isinstance(from_magic, ServerConfig)
    async with McpHub() as hub:
        with pytest.raises(ServerStartError):
            await hub.connect("srv", **entry)
        from_hub = hub.server_config("srv")
    assert from_file.problem is None
    assert _same(from_file) == _same(from_magic) == _same(from_hub)
    assert from_hub.timeout == 5.0
    assert from_hub.args == ("-m", "srv", "--port", "3")


def test_one_table_of_allowed_values() -> None:
    assert TRANSPORTS == choices("transport") == ("stdio", "http", "sse")
    assert APPROVE_MODES == choices("approve") == ("auto", "ask", "deny")
    assert ELICITATION_MODES == choices("elicitation") == ("ask", "decline")
    assert SAMPLING_MODES == choices("sampling") == ("ask", "auto", "deny")
    assert choices("log_level") == LOG_LEVELS
    assert choices("timeout") == ()
    for key, allowed in CHOICES.items():  # the table and the model's Literals say the same
        annotation = ServerConfig.model_fields[key].annotation
        arms = (annotation,) if get_origin(annotation) is Literal else get_args(annotation)
        literals = {v for arm in arms if get_origin(arm) is Literal for v in get_args(arm)}
        assert literals == set(allowed), key


@pytest.mark.parametrize(("entry", "says"), [
    ({"command": "x", "log_level": "loud"}, "log_level must be one of debug, info"),
    ({"command": "x", "timeout": True}, "timeout must be a positive number of seconds"),
    ({"command": "x", "disabled": "yes"}, "disabled must be true or false"),
    ({"command": "x", "env": ["A=b"]}, "env must be an object of strings"),
    ({"command": "x", "roots": "/data"}, "roots must be a list of paths"),
    ({"command": "x", "url": "http://h/mcp"}, "not both"),
    ({"transport": "sse"}, 'transport sse needs "url"'),
    ({"command": "x", "transport": "http"}, "does not fit"),
])
def test_every_problem_is_one_line_naming_the_server_and_the_key(entry: dict[str, Any], says: str) -> None:
    problem = parse_server("srv", entry).problem
    assert problem is not None
    assert problem.startswith("server 'srv': ")
    assert says in problem
    assert "\n" not in problem


def test_a_bad_key_is_left_out_and_the_good_ones_kept() -> None:
    config = parse_server("srv", {"command": "x", "timeout": -1, "approve": "ask", "sampling": "always"})
    assert (config.command, config.approve, config.timeout, config.sampling) == ("x", "ask", None, None)
    assert config.problem is not None
    assert "timeout must be" in config.problem
    assert "sampling must be one of ask, auto, deny (got 'always')" in config.problem


def test_type_aliases_and_numbers_as_strings() -> None:
    config = parse_server("srv", {"type": "streamable-http", "url": "http://h/mcp", "headers": {"X-Port": 8080}})
    assert (config.transport, config.headers, config.problem) == ("http", {"X-Port": "8080"}, None)


def test_unknown_keys_warn_wherever_they_come_from() -> None:
    with pytest.warns(ConfigWarning, match="server 'srv': unknown key 'colour' ignored"):
        config = parse_server("srv", {"command": "x", "colour": "blue"})
    assert config.problem is None


def test_a_config_is_a_frozen_value_and_positional_name_still_works() -> None:
    config = ServerConfig("srv", command="x")
    assert config == ServerConfig(name="srv", command="x", display="written another way")
    with pytest.raises(ValueError, match="frozen"):
        config.command = "y"  # type: ignore[misc]
