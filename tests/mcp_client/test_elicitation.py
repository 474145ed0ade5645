"""Elicitation forms as values: fields typed from the schema, SEP-1034 defaults, SEP-1330 enums, typed-in text."""

from __future__ import annotations

import asyncio

import mcp.types as mt
import pytest

from synapse_nb.config import ServerConfig, parse_mcp_config
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationError, UrlElicitation, parse_form
from synapse_nb.mcp_client.handlers import ClientHandlers, ServerHooks
from synapse_nb.mcp_client.logs import LogEntry, LogRing

# the schema of the conformance suite's elicitation-sep1034-client-defaults scenario
DEFAULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
    "required": [],
}

ENUMS_SCHEMA = {
    "type": "object",
    "properties": {
        "plain": {"type": "string", "enum": ["a", "b"]},
        "titled": {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
        "legacy": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
        "many": {"type": "array", "items": {"type": "string", "enum": ["r", "g", "b"]}, "minItems": 1, "maxItems": 2},
        "many_titled": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"},
                                                            {"const": "f2", "title": "Trout"}]}},
        "age": {"type": "integer", "minimum": 1, "maximum": 10},
        "email": {"type": "string", "format": "email", "maxLength": 20},
    },
    "required": ["plain"],
}


def test_defaults_of_every_type_apply_to_omitted_fields() -> None:
    form = parse_form("srv", "please", DEFAULTS_SCHEMA)
    answer = form.accept_defaults()
    assert answer.action == "accept"
    assert answer.content == {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}
    assert form.answer({"age": "41"}).content == {**answer.content, "age": 41}


def test_enums_titled_untitled_single_and_multi() -> None:
    form = parse_form("srv", "pick", ENUMS_SCHEMA)
    by_name = {f.name: f for f in form.fields}
    assert [(c.value, c.title) for c in by_name["titled"].choices] == [("x", "Ex"), ("y", "Why")]
    assert [c.title for c in by_name["legacy"].choices] == ["Cats", "Dogs"]
    assert [c.title for c in by_name["plain"].choices] == ["a", "b"]
    assert by_name["many"].kind == "multi_choice"
    assert by_name["email"].format == "email"
    content = form.answer({"plain": "2", "titled": "Why", "legacy": "Dogs", "many": "r, b",
                           "many_titled": ["Tuna", "f2"], "age": 3}).content
    assert content == {"plain": "b", "titled": "y", "legacy": "p2", "many": ["r", "b"], "many_titled": ["f1", "f2"],
                       "age": 3}


@pytest.mark.parametrize(("values", "problem"), [
    ({}, "'plain' is required"),
    ({"plain": "c"}, "must be one of a, b"),
    ({"plain": "a", "age": "11"}, "at most 10"),
    ({"plain": "a", "age": "two"}, "needs an integer"),
    ({"plain": "a", "many": "r,g,b"}, "at most 2"),
    ({"plain": "a", "email": "x" * 21}, "at most 20 characters"),
    ({"plain": "a", "colour": "red"}, "no field named colour"),
])
def test_answers_that_do_not_fit_say_why(values: dict[str, object], problem: str) -> None:
    form = parse_form("srv", "pick", ENUMS_SCHEMA)
    with pytest.raises(ElicitationError, match=problem):
        form.answer(values)


def test_booleans_from_typed_text() -> None:
    form = parse_form("srv", "ok?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    assert form.answer({"ok": "yes"}).content == {"ok": True}
    assert form.answer({"ok": "n"}).content == {"ok": False}
    with pytest.raises(ElicitationError, match="yes or no"):
        form.answer({"ok": "maybe"})


def test_config_keys_for_the_client_features() -> None:
    servers = parse_mcp_config("""{"mcpServers": {
        "good": {"command": "x", "elicitation": "decline", "sampling": "auto", "roots": ["${HOME}/data"],
                 "log_level": "warning"},
        "bad": {"command": "x", "elicitation": "maybe", "sampling": "always", "log_level": "loud"}}}""",
                               environ={"HOME": "/home/u"})
    good = servers["good"]
    assert (good.elicitation, good.sampling, good.roots, good.log_level) == ("decline", "auto", ("/home/u/data",),
                                                                            "warning")
    assert good.problem is None
    problem = servers["bad"].problem or ""
    assert "elicitation must be one of ask, decline" in problem
    assert "sampling must be one of ask, auto, deny" in problem
    assert "log_level must be one of debug" in problem


def test_log_ring_is_bounded_and_filters_by_level() -> None:
    ring = LogRing(size=3)
    for level in ("debug", "info", "warning", "error"):
        ring.add(LogEntry(level=level, data={"n": level}))
    assert [e.level for e in ring.tail()] == ["info", "warning", "error"]
    assert ring.dropped == 1
    assert [e.level for e in ring.tail(level="warning")] == ["warning", "error"]
    assert ring.tail(1)[0].text == '{"n": "error"}'


def test_a_url_flow_completed_before_its_question_is_not_asked() -> None:
    """The server's completion may overtake its own question: the user is then not asked at all."""
    asked: list[object] = []
    events: list[tuple[str, object]] = []

    async def elicit(request: object) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer.decline()

    hooks = ServerHooks(ServerConfig(name="srv", command="x"), ClientHandlers(elicit=elicit),
                        lambda event, detail: events.append((event, dict(detail))))
    done = mt.ElicitCompleteNotification(params=mt.ElicitCompleteNotificationParams(elicitation_id="e-1"))
    hooks._notice(done)
    early = UrlElicitation("srv", "Sign in", "https://example.com", "e-1")
    other = UrlElicitation("srv", "Sign in", "https://example.com", "e-2")
    assert asyncio.run(hooks._answer(early)) == (ElicitationAnswer("accept"), True)
    assert asyncio.run(hooks._answer(other)) == (ElicitationAnswer.decline(), False)
    assert asked == [other]
    assert events == [("elicitation_complete", {"elicitation_id": "e-1"})]
