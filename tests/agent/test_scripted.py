"""The scripted provider: streaming shape, script forms, rules with templates, determinism, the offline answer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.errors import ConfigError
from synapse_nb.protocols import Completion, Provider, ProviderChunk, TextChunk, ToolCallChunk
from synapse_nb.providers.scripted import OFFLINE_ANSWER, ScriptedProvider, text_chunks
from synapse_nb.types import Message, ToolCall, ToolSpec


def spec(name: str) -> ToolSpec:
    server, _, tool = name.rpartition("__")
    return ToolSpec(name, "", {"type": "object"}, server=server or None, original_name=tool)


async def collect(provider: ScriptedProvider, messages: list[Message], tools: list[ToolSpec] | None = None
                  ) -> list[ProviderChunk]:
    return [chunk async for chunk in provider.stream(messages, tools or [], system="sys")]


def completion(chunks: list[ProviderChunk]) -> Completion:
    assert isinstance(chunks[-1], Completion)
    assert not any(isinstance(c, Completion) for c in chunks[:-1])
    return chunks[-1]


def test_it_is_a_provider() -> None:
    provider = ScriptedProvider()
    assert isinstance(provider, Provider)
    assert (provider.name, provider.model) == ("scripted", "demo")


def test_text_chunks_are_a_few_words_and_lossless() -> None:
    text = "  Leading space, a table:\n| a | b |\n|---|---|\ntrailing  "
    chunks = text_chunks(text, 3)
    assert "".join(chunks) == text
    assert len(chunks) > 3
    assert all(len(c.split()) <= 3 for c in chunks)
    assert text_chunks("") == []


@pytest.mark.anyio
async def test_text_streams_in_chunks_and_ends_with_a_completion() -> None:
    answer = "One two three four five six seven eight nine ten."
    chunks = await collect(ScriptedProvider([answer]), [Message.user("hi")])
    texts = [c.text for c in chunks if isinstance(c, TextChunk)]
    assert len(texts) == 4
    assert "".join(texts) == answer
    done = completion(chunks)
    assert done.message == Message.assistant(answer)
    assert done.stop_reason == "end_turn"
    assert done.usage.input_tokens > 0
    assert done.usage.output_tokens == -(-len(answer) // 4)
    assert done.ttft_ms is not None


@pytest.mark.anyio
async def test_tool_calls_stream_as_chunks_with_streamed_arguments() -> None:
    script = [{"text": "Looking.", "tool_calls": [
        {"name": "query", "arguments": {"sql": "select 1", "limit": 5}},
        {"name": "list_tables"},
    ]}]
    tools = [spec("demo__query"), spec("demo__list_tables"), spec("other__query")]
    chunks = await collect(ScriptedProvider(script), [Message.user("go")], tools)
    call_chunks = [c for c in chunks if isinstance(c, ToolCallChunk)]
    firsts = [c for c in call_chunks if c.id is not None]
    assert [(c.index, c.name) for c in firsts] == [(0, "demo__query"), (1, "demo__list_tables")]
    args0 = "".join(c.arguments_delta for c in call_chunks if c.index == 0)
    assert json.loads(args0) == {"sql": "select 1", "limit": 5}
    assert len([c for c in call_chunks if c.index == 0 and c.arguments_delta]) == 2
    done = completion(chunks)
    assert done.stop_reason == "tool_use"
    assert [c.name for c in done.message.tool_calls] == ["demo__query", "demo__list_tables"]
    assert [c.id for c in done.message.tool_calls] == [c.id for c in firsts]
    assert done.message.content == "Looking."


def conversation(prompt: str, *calls_and_results: tuple[ToolCall, str]) -> list[Message]:
    messages = [Message.user(prompt)]
    for call, result in calls_and_results:
        messages += [Message.assistant("", (call,)), Message.tool(call.id, result, name=call.name)]
    return messages


@pytest.mark.anyio
async def test_rules_pick_tools_by_prompt_and_template_the_answer() -> None:
    script = {
        "rules": [
            {"match": r"weather in (?P<city>\w+)", "tool": "forecast", "arguments": {"city": "{city}"},
             "answer": "In {city}: {result} (asked: {prompt})"},
            {"match": "hello", "answer": "Hi from {model}!"},
        ],
        "fallback": "I only know the weather.",
    }
    provider = ScriptedProvider(script, model="weather")
    tools = [spec("met__forecast")]

    first = completion(await collect(provider, conversation("What's the weather in Oslo?"), tools))
    call = first.message.tool_calls[0]
    assert (call.name, dict(call.arguments)) == ("met__forecast", {"city": "Oslo"})

    answer = completion(await collect(provider, conversation("What's the weather in Oslo?", (call, "rain")), tools))
    assert answer.message.content == "In Oslo: rain (asked: What's the weather in Oslo?)"
    assert answer.message.tool_calls == ()

    assert completion(await collect(provider, conversation("hello"), tools)).message.content == "Hi from weather!"
    # The forecast rule needs its tool: without it offered, the fallback answers.
    no_tools = completion(await collect(provider, conversation("weather in Oslo"), []))
    assert no_tools.message.content == "I only know the weather."
    assert completion(await collect(provider, conversation("other"), tools)).message.content == (
        "I only know the weather."
    )


@pytest.mark.anyio
async def test_turns_play_in_order_over_the_conversation_and_the_last_repeats() -> None:
    provider = ScriptedProvider(["first", "second"])
    history = [Message.user("a")]
    assert completion(await collect(provider, history)).message.content == "first"
    history += [Message.assistant("first"), Message.user("b")]
    assert completion(await collect(provider, history)).message.content == "second"
    history += [Message.assistant("second"), Message.user("c")]
    assert completion(await collect(provider, history)).message.content == "second"


@pytest.mark.anyio
async def test_a_script_written_in_the_model_id_plays_from_its_own_cell() -> None:
    # a second `scripted:[...]` cell in one session played the turn after the session's earlier replies
    inline = ScriptedProvider('[{"tool": "echo", "arguments": {"text": "hi"}}, "echoed"]')
    history = [Message.user("a"), Message.assistant("from an earlier cell"), Message.user("b")]
    reply = completion(await collect(inline, history, [spec("demo__echo")])).message
    assert [c.name for c in reply.tool_calls] == ["demo__echo"]  # its first turn, not its second
    call = reply.tool_calls[0]
    history += [reply, Message.tool(call.id, "hi", name=call.name)]
    assert completion(await collect(inline, history, [spec("demo__echo")])).message.content == "echoed"


@pytest.mark.parametrize(("entry", "meant"), [('{"tool": "echo", "args": {"text": "hi"}}', "'args' (use 'arguments')"),
                                              ('{"text": "x", "tool_calls": [{"name": "t", "input": {}}]}',
                                               "'input' (use 'arguments')"),
                                              ('{"match": "x", "reply": "y"}', "'reply' (use 'text')")])
def test_a_key_the_script_does_not_know_is_an_error_not_dropped(entry: str, meant: str) -> None:
    with pytest.raises(ConfigError, match=rf"unknown key {re.escape(meant)}"):
        ScriptedProvider(f"[{entry}]")


@pytest.mark.anyio
async def test_replies_are_deterministic_apart_from_call_ids() -> None:
    provider = ScriptedProvider([{"text": "x", "tool_calls": [{"name": "t", "arguments": {"a": 1}}]}])
    one = completion(await collect(provider, [Message.user("q")]))
    two = completion(await collect(provider, [Message.user("q")]))
    assert one.message.content == two.message.content
    assert [(c.name, c.arguments) for c in one.message.tool_calls] == [
        (c.name, c.arguments) for c in two.message.tool_calls
    ]
    assert one.usage == two.usage
    assert one.message.tool_calls[0].id != two.message.tool_calls[0].id  # unique across sessions


@pytest.mark.anyio
async def test_scripts_load_from_json_strings_files_and_paths(tmp_path: Path) -> None:
    data = [{"match": "ping", "answer": "pong"}, "default"]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data))
    for script in (json.dumps(data), str(path), path, data):
        provider = ScriptedProvider(script)
        assert completion(await collect(provider, [Message.user("ping?")])).message.content == "pong"
        assert completion(await collect(provider, [Message.user("other")])).message.content == "default"


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("no-such-script", "unknown script 'no-such-script'"),
        ("[1, 2", "not valid JSON"),
        ([{"match": "(", "answer": "x"}], "not a valid regex"),
        ([{"tool_calls": [{"arguments": {}}]}], "needs a name"),
        ({"turns": [], "extra": 1}, "unknown keys"),
        (42, "a script is a list"),
        ("/nonexistent/script.json", "cannot read script file"),
    ],
)
def test_bad_scripts_are_config_errors(script: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ScriptedProvider(script)


@pytest.mark.anyio
async def test_an_empty_rule_script_gives_the_offline_answer() -> None:
    done = completion(await collect(ScriptedProvider({"rules": []}), [Message.user("anything")]))
    assert done.message.content == OFFLINE_ANSWER
    assert "SYNAPSE_MODEL" in OFFLINE_ANSWER
    assert "OPENAI_API_KEY" in OFFLINE_ANSWER
    # the way to start the demo server that works from any kernel (a bare `python` may not have synapse_nb)
    assert "%mcp connect demo -- {sys.executable} -m synapse_nb.mcp_client.demo_server" in OFFLINE_ANSWER
    assert "python -m" not in OFFLINE_ANSWER
