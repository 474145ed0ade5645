"""ApprovalPolicy: default mode, per-tool and per-server rules (exact and glob), destructive tools, "always"."""

from __future__ import annotations

from typing import Any

import pytest

from synapse_nb.agent.approval import ApprovalPolicy
from synapse_nb.errors import ConfigError
from synapse_nb.types import ToolSpec


def spec(name: str, server: str | None = None, **annotations: Any) -> ToolSpec:
    original = name.split("__", 1)[1] if server else name
    return ToolSpec(name, "", {}, server=server, original_name=original, annotations=annotations)


QUERY = spec("demo__query", "demo", readOnlyHint=True)
DROP = spec("demo__drop_table", "demo", destructiveHint=True)
READ = spec("files__read", "files", readOnlyHint=True)


def test_the_default_mode_applies_when_nothing_else_does() -> None:
    assert ApprovalPolicy().decide(QUERY) == "auto"
    assert ApprovalPolicy("ask").decide(QUERY) == "ask"
    assert ApprovalPolicy("deny").decide(spec("local")) == "deny"


def test_per_tool_rules_exact_before_glob() -> None:
    policy = ApprovalPolicy("auto", tools={"demo__*": "deny", "demo__query": "ask"})
    assert policy.decide(QUERY) == "ask"
    assert policy.decide(spec("demo__list_tables", "demo", readOnlyHint=True)) == "deny"
    assert policy.decide(READ) == "auto"


def test_server_rules_as_a_mode_or_a_tool_map() -> None:
    policy = ApprovalPolicy(
        "ask",
        servers={"files": "auto", "demo": {"query": "deny", "list_*": "auto"}, "remote-*": "deny"},
    )
    assert policy.decide(READ) == "auto"
    assert policy.decide(QUERY) == "deny"
    assert policy.decide(spec("demo__list_tables", "demo")) == "auto"
    assert policy.decide(spec("demo__describe_table", "demo")) == "ask"  # not in the map: the default
    assert policy.decide(spec("remote-1__x", "remote-1")) == "deny"
    policy.set_server("files", None)
    assert policy.decide(READ) == "ask"


def test_a_per_tool_rule_beats_the_server_rule() -> None:
    policy = ApprovalPolicy(servers={"demo": "deny"}, tools={"demo__query": "auto"})
    assert policy.decide(QUERY) == "auto"
    assert policy.decide(DROP) == "deny"


def test_destructive_tools_ask_unless_a_rule_says_auto() -> None:
    assert ApprovalPolicy().decide(DROP) == "ask"
    assert ApprovalPolicy("deny").decide(DROP) == "deny"  # never looser than the default
    assert ApprovalPolicy(tools={"demo__drop_table": "auto"}).decide(DROP) == "auto"
    assert ApprovalPolicy(servers={"demo": "auto"}).decide(DROP) == "auto"
    assert ApprovalPolicy(destructive="auto").decide(DROP) == "auto"
    read_only = spec("demo__peek", "demo", destructiveHint=True, readOnlyHint=True)
    assert ApprovalPolicy().decide(read_only) == "auto"


def test_an_mcp_tool_that_says_nothing_is_possibly_destructive_and_asks() -> None:
    # MCP's ToolAnnotations: destructiveHint defaults to true (meaningful when readOnlyHint is false)
    silent = spec("redis__delete", "redis")
    assert silent.destructive_hint is None
    assert silent.destructive
    assert ApprovalPolicy().decide(silent) == "ask"
    assert ApprovalPolicy().decide(spec("redis__set", "redis", readOnlyHint=False)) == "ask"
    assert ApprovalPolicy().decide(spec("memo__add", "memo", destructiveHint=False)) == "auto"
    assert ApprovalPolicy(servers={"redis": "auto"}).decide(silent) == "auto"
    native = spec("shout")  # the user's own @synapse_nb.tool function: not a server's tool
    assert native.destructive_hint is False
    assert ApprovalPolicy().decide(native) == "auto"


def test_always_is_remembered_per_tool() -> None:
    policy = ApprovalPolicy("ask")
    policy.remember_always("demo__query")
    assert policy.decide(QUERY) == "auto"
    assert policy.decide(READ) == "ask"
    assert policy.remembered == {"demo__query"}
    policy.forget()
    assert policy.decide(QUERY) == "ask"


def test_bad_modes_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="sometimes"):
        ApprovalPolicy("sometimes")
    with pytest.raises(ConfigError, match="server 'demo'"):
        ApprovalPolicy(servers={"demo": {"query": "maybe"}})
    assert ApprovalPolicy(" ASK ").default == "ask"


def test_a_policy_from_the_servers_file() -> None:
    from synapse_nb.config import ServerConfig

    servers = {
        "demo": ServerConfig(name="demo", command="python", approve={"query": "ask"}),
        "files": ServerConfig(name="files", command="fs", approve="deny"),
        "plain": ServerConfig(name="plain", command="p"),
    }
    policy = ApprovalPolicy.from_servers(servers, "auto")
    assert policy.decide(QUERY) == "ask"
    assert policy.decide(READ) == "deny"
    assert policy.decide(spec("plain__x", "plain", readOnlyHint=True)) == "auto"
    assert ApprovalPolicy.from_servers({"demo": "deny"}).decide(QUERY) == "deny"
    with pytest.raises(ConfigError):
        ApprovalPolicy.from_servers({"demo": 3})
