"""McpHub against the npm reference server `@modelcontextprotocol/server-everything` (node, stdio).

The server is installed by `make tools`; when it is missing these tests fail (see the `everything` fixture).
"""

from __future__ import annotations

import json

import pytest

from synapse_nb.mcp_client.hub import McpHub
from tests.mcp_client.mcp_helpers import Events

pytestmark = pytest.mark.anyio


async def test_everything_tools_results_and_list_changed(everything: dict[str, object], events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        info = await hub.connect("everything", **everything)  # type: ignore[arg-type]
        assert info.state == "connected"
        assert info.server_name == "mcp-servers/everything"
        names = {t.name for t in hub.tools}
        assert {"everything__echo", "everything__get-sum", "everything__get-tiny-image"} <= names
        assert hub.tool("everything__get-env").annotations.get("readOnlyHint") is True

        # it registers more tools once initialised and says so with notifications/tools/list_changed
        await events.wait_for("tools_changed", "everything")
        assert "everything__simulate-research-query" in {t.name for t in hub.all_tools}  # marked: needs MCP tasks

        assert (await hub.call("everything__echo", {"message": "hi"})).text == "Echo: hi"
        assert "is 5" in (await hub.call("everything__get-sum", {"a": 2, "b": 3})).text
        image = await hub.call("everything__get-tiny-image", {})
        assert [b.kind for b in image.content] == ["text", "image", "text"]
        assert image.images[0].mime_type == "image/png"
        weather = await hub.call("everything__get-structured-content", {"location": "New York"})
        assert weather.structured_content is not None
        assert set(weather.structured_content) == {"temperature", "conditions", "humidity"}
        bad = await hub.call("everything__get-sum", {"a": "two"})
        assert bad.is_error
        links = await hub.call("everything__get-resource-links", {"count": 2})
        assert [b.kind for b in links.content].count("resource_link") == 2

        resources = await hub.list_resources("everything")
        assert resources
        assert resources[0].uri.startswith("demo://")
        prompts = {p.name: p for p in await hub.list_prompts("everything")}
        assert [a.name for a in prompts["args-prompt"].arguments] == ["city", "state"]
        rendered = await hub.get_prompt("everything", "args-prompt", {"city": "Lyon"})
        assert "Lyon" in rendered.messages[0].content
        assert "Starting default (STDIO) server" in hub.server("everything").stderr_tail


async def test_everything_sees_only_the_safe_environment(everything: dict[str, object], no_secrets: str) -> None:
    async with McpHub() as hub:
        await hub.connect("everything", **everything, env={"GIVEN_TO_SERVER": "1"})  # type: ignore[arg-type]
        seen = json.loads((await hub.call("everything__get-env", {})).text)
    assert "OPENAI_API_KEY" not in seen
    assert no_secrets not in json.dumps(seen)
    assert seen["GIVEN_TO_SERVER"] == "1"
    assert set(seen) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "GIVEN_TO_SERVER"}
