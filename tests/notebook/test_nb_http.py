"""A real HTTP provider behind a magic: the local wire-compatible LLM server, an OpenAI base URL, a fake key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import synapse_nb
from synapse_nb.notebook.commands.ask import TurnError
from tests.support.llm_server import LlmServer, call, error, text, tool_calls

FAKE_KEY = "sk-fake-notebook-test-0123456789"


@pytest.fixture
def openai_server(clean_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmServer]:
    with LlmServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        yield server


def test_openai_wire_answers_and_calls_a_notebook_tool(ip: Any, openai_server: LlmServer) -> None:
    ip.run("import synapse_nb\n@synapse_nb.tool\ndef add(a: int, b: int) -> int:\n    '''Add.'''\n    return a + b\n")
    openai_server.queue(tool_calls(call("add", {"a": 2, "b": 3})), text("The sum is **5**."))
    ip.cell("synapse --model openai:gpt-test", "what is 2 + 3?")
    result = ip.ns["_synapse"]
    assert result.text == "The sum is **5**."
    assert result.model == "openai:gpt-test"
    assert result.tool_calls.result_text.tolist() == ["5"]
    first, second = openai_server.requests
    assert first.body["model"] == "gpt-test"
    assert first.body["tools"][0]["function"]["name"] == "add"
    assert second.body["messages"][-1]["role"] == "tool"
    assert "offline" not in ip.published.text()
    assert FAKE_KEY not in ip.published.text()


def test_a_provider_error_is_one_line_and_recorded(ip: Any, openai_server: LlmServer) -> None:
    openai_server.queue(error(401, "invalid api key"))
    with pytest.raises(TurnError) as caught:
        ip.cell("synapse --model openai:gpt-test", "hello")
    message = str(caught.value)
    assert message.startswith("AuthenticationError: ")
    assert "\n" not in message
    assert FAKE_KEY not in message
    assert ip.ns["_synapse"].status == "failed"
    assert "✗ failed" in ip.published.text()
    turns = synapse_nb.history().turns()
    assert turns.status.tolist() == ["failed"]
    assert turns.error.iloc[0]
