"""`%mcp` and `%%synapse` against the Redis reference server (npm) and a real Redis: its tools say nothing about
side effects, so they are possibly destructive (MCP's default) and the agent asks before it deletes a key, while
calls made by hand never ask; `key=value` words follow the tools' input schemas."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from IPython.core.error import UsageError

from tests.support import db_services
from tests.support.npm_servers import node_for

Script = Callable[[Any], str]


@pytest.fixture(scope="module")
def rds() -> Iterator[db_services.Redis]:
    with db_services.redis() as server:
        yield server


@pytest.fixture
def redis_ip(ip: Any, rds: db_services.Redis) -> Any:
    """`ip` with the Redis reference server connected as `redis`, on a Redis emptied first."""
    node = node_for(db_services.REDIS_SERVER)
    ip.line("mcp", f"connect redis -- {node} {db_services.REDIS_SERVER} {rds.url}")
    keys = ip.line("mcp", "call redis.list").text
    for key in keys.splitlines()[1:]:
        ip.line("mcp", f"call redis.delete key={key.strip()}")
    return ip


def value_of(ip: Any, key: str) -> str:
    return str(ip.line("mcp", f"call redis.get key={key}").text)


@pytest.mark.process
def test_the_agent_asks_before_a_tool_that_says_nothing_deletes_a_key(redis_ip: Any, script: Script) -> None:
    ip = redis_ip
    ip.line("mcp", "call redis.set key=greeting value=hello")  # by hand: the user's own call, it never asks
    assert not ip.prompts
    listing = ip.line("mcp", "tools redis")
    assert dict(zip(listing.tool, listing.destructive, strict=True))["delete"] == "unknown"
    model = script([{"match": "delete (\\w+)", "tool": "delete", "arguments": {"key": "{1}"},
                     "answer": "Done: {result}"}])

    ip.answers = ["n"]
    ip.cell(f"synapse --model {model}", "delete greeting")
    assert ip.prompts == ["allow redis__delete? [y/n/a]: "]
    card = next(b for b, _, _ in ip.published.items if "snb-approval-card" in b.get("text/html", ""))
    assert "[may change data]" in card["text/plain"]
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["denied"]
    assert value_of(ip, "greeting") == "hello"  # nothing was deleted

    ip.answers = ["a"]  # always, for this tool
    ip.cell(f"synapse --model {model}", "delete greeting")
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["always"]
    assert "not found" in value_of(ip, "greeting").lower()
    ip.line("mcp", "call redis.set key=other value=x")
    ip.cell(f"synapse --model {model}", "delete other")
    assert len(ip.prompts) == 2  # the second turn asked; the third did not
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["auto"]


@pytest.mark.process
def test_words_keep_their_text_where_the_schema_says_string(redis_ip: Any) -> None:
    ip = redis_ip
    ip.line("mcp", "call redis.set key=1706.03762 value=1.10")  # both strings in the tool's schema
    assert value_of(ip, "1706.03762") == "1.10"
    ip.line("mcp", "call redis.set key=flag value=true expireSeconds=60")  # a number where the schema says number
    assert value_of(ip, "flag") == "true"


@pytest.mark.process
def test_a_servers_json_rpc_error_is_shown_as_the_servers_error_in_one_line(redis_ip: Any) -> None:
    with pytest.raises(UsageError) as caught:  # the cell still ends with an error
        redis_ip.line("mcp", 'call redis.set {"key": 5, "value": "x"}')
    assert type(caught.value) is not UsageError  # not shown as "UsageError: ...": it is the server's error
    (line,) = caught.value._render_traceback_()  # type: ignore[attr-defined]
    assert re.sub(r"\x1b\[[0-9;]*m", "", line).startswith(
        "McpError: MCP server 'redis' answered tool 'set' with error -32603: Invalid arguments")
