"""Magic lines parse into typed options; each mistake is one UsageError line that names the fix."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

import synapse_nb
from synapse_nb.config import ServerConfig
from synapse_nb.notebook.commands.args import (
    AskOptions,
    ConfigFile,
    expand,
    parse_ask,
    parse_call_arguments,
    parse_call_target,
    parse_connect,
)


def test_every_synapse_option_parses() -> None:
    options = parse_ask(
        "--model openai:gpt-4.1-mini --session analysis --system 'be brief' --tools 'demo__*' --tools echo "
        "--max-iterations 3 --approve ask --format json --out answer --background --no-history"
    )
    assert options == AskOptions(
        model="openai:gpt-4.1-mini", session="analysis", system="be brief", tools=("demo__*", "echo"),
        max_iterations=3, approve="ask", format="json", out="answer", background=True, history=False,
    )


def test_defaults_mean_use_the_settings() -> None:
    options = parse_ask("")
    assert options.model is None
    assert options.tools is None
    assert options.format is None
    assert options.history


def test_no_tools_is_an_empty_pattern_list() -> None:
    assert parse_ask("--no-tools").tools == ()


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("--bogus", "unknown option --bogus"),
        ("--approve maybe", "--approve 'maybe' is not one of auto, ask, deny"),
        ("--format html", "--format 'html' is not one of markdown, text, json, code"),
        ("--max-iterations zero", "'zero' is not a whole number"),
        ("--max-iterations 0", "must be at least 1"),
        ("--out 2x", "--out '2x' is not a Python variable name"),
        ("--tools x --no-tools", "contradict"),
        ("what is this", "write the prompt in the cell body"),
        ("--system 'unclosed", "close the quote"),
        ("--model", "--model needs a value"),
        ("--background --format code", "cannot insert a cell"),
    ],
)
def test_bad_synapse_lines_say_what_to_do(line: str, needle: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_ask(line)
    message = str(caught.value)
    assert needle in message
    assert "\n" not in message
    assert message.startswith("%%synapse")


def test_connect_stdio_splits_at_the_double_dash() -> None:
    spec = parse_connect(["demo", "--env", "TOKEN=abc", "--", "python", "-m", "server", "--port", "3"])
    assert isinstance(spec, ServerConfig)
    assert spec.name == "demo"
    assert spec.command == "python"
    assert spec.args == ("-m", "server", "--port", "3")
    assert spec.env == {"TOKEN": "abc"}
    assert spec.transport == "stdio"


def test_connect_url_with_headers() -> None:
    spec = parse_connect(["api", "https://example.test/mcp", "--header", "Authorization=Bearer x=y", "--timeout", "5"])
    assert isinstance(spec, ServerConfig)
    assert spec.transport == "http"
    assert spec.url == "https://example.test/mcp"
    assert spec.headers == {"Authorization": "Bearer x=y"}
    assert spec.timeout == 5.0


def test_connect_without_a_name_uses_the_config_file() -> None:
    assert parse_connect([]) == ConfigFile(None)
    assert parse_connect(["--config", "servers.json"]) == ConfigFile("servers.json")


def test_connect_with_only_a_name_connects_that_entry_of_the_config_file() -> None:
    """Issue 21, defect 3: `%mcp connect NAME` for a server of the config file said "say how to reach it"."""
    assert parse_connect(["fs"]) == ConfigFile(None, name="fs")
    assert parse_connect(["fs", "--config", "servers.json"]) == ConfigFile("servers.json", name="fs")


@pytest.mark.parametrize(
    ("words", "needle"),
    [
        (["demo", "--timeout", "5"], "say how to reach it"),
        (["demo", "--"], "nothing after '--'"),
        (["demo", "ftp://x"], "is not an http(s) URL"),
        (["demo", "http://x", "--header", "novalue"], "is not KEY=VALUE"),
        (["demo", "--header", "A=b", "--", "cmd"], "--header is for URL servers"),
        (["demo", "http://x", "--env", "A=b"], "--env and --cwd are for command servers"),
        (["bad name!", "--", "cmd"], "letters, digits"),
        (["demo", "--config", "x.json", "--", "cmd"], "--config names the file"),
        (["demo", "--approve", "sometimes", "--", "cmd"], "not one of auto, ask, deny"),
        (["demo", "http://x", "--frobnicate"], "unknown option"),
        (["--config", "x.json", "--approve", "ask"], "--approve applies to one server"),
        (["demo", "--timeout", "0", "--", "cmd"], "server 'demo': timeout must be a positive number of seconds"),
        (["demo", "--transport", "sse", "--", "cmd"], "transport sse needs \"url\""),
    ],
)
def test_bad_connect_lines(words: list[str], needle: str) -> None:
    with pytest.raises(UsageError, match=None) as caught:
        parse_connect(words)
    assert needle in str(caught.value)


def test_call_target_accepts_dot_and_qualified_names() -> None:
    assert parse_call_target("demo.echo").tool == "echo"
    assert parse_call_target("demo__list_tables").server == "demo"
    with pytest.raises(UsageError, match=r"is not SERVER\.TOOL"):
        parse_call_target("echo")


def test_call_arguments_json_or_key_value() -> None:
    assert parse_call_arguments('{"text": "hi", "n": 2}') == {"text": "hi", "n": 2}
    assert parse_call_arguments("text='hello world' n=2 flag=true items=[1,2] name=demo") == {
        "text": "hello world", "n": 2, "flag": True, "items": [1, 2], "name": "demo",
    }
    assert parse_call_arguments("") == {}


SCHEMA = {"type": "object", "properties": {
    "paper_id": {"type": "string"}, "message": {"type": "string"}, "limit": {"type": "integer"},
    "ratio": {"type": "number"}, "exact": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
    "key": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
    "where": {"type": "object"}, "mode": {"enum": ["fast", "slow"]}, "anything": {"description": "no type"},
}}


def test_call_words_follow_the_tools_input_schema() -> None:
    # a string parameter gets the word as written: 1706.03762 is an arXiv id, not a number; 1.10 stays 1.10
    words = "paper_id=1706.03762 message=1.10 limit=3 ratio=0.5 exact=true tags='[\"a\", \"b\"]' mode=fast"
    assert parse_call_arguments(words, SCHEMA) == {
        "paper_id": "1706.03762", "message": "1.10", "limit": 3, "ratio": 0.5, "exact": True, "tags": ["a", "b"],
        "mode": "fast",
    }
    assert parse_call_arguments("key=123 message=true message2=7", SCHEMA) == {
        "key": "123", "message": "true", "message2": 7,  # message2 is not in the schema: JSON when it parses
    }
    assert parse_call_arguments("key='[\"a\", \"b\"]' anything=1.10", SCHEMA) == {"key": ["a", "b"],
                                                                                    "anything": 1.1}
    assert parse_call_arguments('{"paper_id": 1706.03762}', SCHEMA) == {"paper_id": 1706.03762}  # JSON as written


@pytest.mark.parametrize(
    ("words", "needle"),
    [("limit=many", "limit=many is not an integer (the tool's schema says integer); e.g. limit=3"),
     ("limit=2.5", "is not an integer"), ("exact=yes", "is not a boolean"), ("tags=a,b", "e.g. tags='[\"a\""),
     ("where=x", "is not an object")],
)
def test_a_word_that_does_not_fit_its_schema_is_one_line(words: str, needle: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_call_arguments(words, SCHEMA)
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [('{"text": "hi"', "malformed JSON"), ("[1, 2]", "not KEY=VALUE"), ('{"a": 1} x', "malformed JSON"),
     ("text", "not KEY=VALUE")],
)
def test_bad_call_arguments(text: str, needle: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_call_arguments(text)
    assert needle in str(caught.value)


def test_expand_uses_the_namespace_and_leaves_failures_alone() -> None:
    ns = {"exe": "/venv/bin/python", "port": 8000}
    assert expand("demo -- {exe} -m server --port $port", ns) == "demo -- /venv/bin/python -m server --port 8000"
    assert expand("x -- {undefined_name}", ns) == "x -- {undefined_name}"
    assert expand("plain words", ns) == "plain words"


@pytest.mark.parametrize(("parse", "words", "says"), [
    (lambda w: parse_ask(" ".join(w)), ["--modle", "x"], "%%synapse: unknown option --modle (did you mean --model?)"),
    (lambda w: parse_ask(" ".join(w)), ["--no-histroy"], "(did you mean --no-history?)"),
    (parse_connect, ["demo", "--aprove", "ask", "--", "cmd"], "%mcp connect: unknown option --aprove (did you mean "
                                                               "--approve?)"),
    (parse_connect, ["demo", "http://x", "--heder=A=b"], "(did you mean --header?)"),
])
def test_unknown_options_say_which_was_meant(parse: Any, words: list[str], says: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse(words)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_no_guess_for_an_option_like_none() -> None:
    with pytest.raises(UsageError) as caught:
        parse_ask("--zzzzzz")
    assert "did you mean" not in str(caught.value)


def test_words_after_the_double_dash_are_the_servers_even_when_they_look_like_options() -> None:
    spec = parse_connect(["demo", "--timeout", "3", "--", "srv", "--timeout", "9", "--modle", "--"])
    assert isinstance(spec, ServerConfig)
    assert (spec.command, spec.args, spec.timeout) == ("srv", ("--timeout", "9", "--modle", "--"), 3.0)


def test_help_is_generated_from_the_declared_options() -> None:
    from synapse_nb.notebook.commands.args import ASK_OPTIONS, CONNECT_OPTIONS
    from synapse_nb.notebook.commands.help import ASK_HELP, MCP_HELP

    for option in ASK_OPTIONS.options:
        assert f"  {option.usage} " in ASK_HELP, option.flag
    for option in CONNECT_OPTIONS.options:
        if not option.positional:
            assert f"  {option.usage} " in MCP_HELP, option.flag
    # the allowed values come from the one table (server_config), so the help cannot drift from it
    assert "--log-level LEVEL       what the server logs: debug | info | notice" in MCP_HELP
    assert "--approve MODE        auto | ask | deny" in ASK_HELP


def test_a_mistyped_option_on_the_line_magic_says_which_was_meant(ip: Any) -> None:
    with pytest.raises(UsageError, match=r"unknown option --modle \(did you mean --model\?\)"):
        ip.line("synapse", "--modle x")


def test_a_notebook_tool_listed_under_python_is_called_by_hand_as_python_name(ip: Any) -> None:
    # %mcp tools lists @synapse_nb.tool functions under server `python`; %mcp call python.NAME said there was
    # no MCP server named 'python'
    ip.run("import synapse_nb\n@synapse_nb.tool\ndef shout(text: str, times: int = 1) -> str:\n"
           "    '''Shout the text.'''\n    return text.upper() * times\n")
    listing = ip.line("mcp", "tools")
    assert ("python", "shout") in set(zip(listing.server, listing.tool, strict=True))
    out = ip.line("mcp", "call python.shout text=1.10 times=2")  # typed by the function's schema too
    assert out.text == "1.101.10"
    calls = synapse_nb.history().tool_calls()
    assert calls[["tool", "approval"]].values.tolist() == [["shout", "manual"]]
    with pytest.raises(UsageError, match=r"no @synapse_nb.tool function 'nope' in the notebook; its functions: shout"):
        ip.line("mcp", "call python.nope")
