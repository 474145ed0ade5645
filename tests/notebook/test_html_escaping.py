"""Every HTML producer of the notebook escapes what servers, tools, models and users put in it: a `<script>` in a
server name, a tool name, a result, an argument, an error or a message reaches the page as text, never as a tag.
The producers build their HTML with markupsafe (output/markup.py: Html), so a value left unescaped by mistake
would have to be wrapped in Html on purpose."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

import pytest

from synapse_nb.agent.result import TurnResult
from synapse_nb.mcp_client.elicitation import ElicitationField, ElicitationForm, UrlElicitation
from synapse_nb.mcp_client.logs import LogEntry
from synapse_nb.mcp_client.sampling import SamplingRequest
from synapse_nb.notebook.output.calls import call_bundle, read_bundle
from synapse_nb.notebook.output.markup import Html, esc, join
from synapse_nb.notebook.questions.approval_card import answered_card, approval_card
from synapse_nb.notebook.questions.cards import answered, form_card, sampling_card, url_card
from synapse_nb.notebook.questions.sign_in import SignInRequest, sign_in_card, sign_in_link_html
from synapse_nb.notebook.turns.render import capped_text, markdown, progress_html, tool_block
from synapse_nb.notebook.turns.result import SynapseResult
from synapse_nb.notebook.turns.view import ToolCallView, TurnView
from synapse_nb.notebook.widgets._html import badge, pre, state_badge
from synapse_nb.notebook.widgets.call_history import latency_svg, rows_html
from synapse_nb.notebook.widgets.catalogue import blocks_html, prompt_html
from synapse_nb.notebook.widgets.log_view import logs_html
from synapse_nb.notebook.widgets.result_view import result_html
from synapse_nb.notebook.widgets.server_panel import card_html, prompts_html, resources_html
from synapse_nb.notebook.widgets.tool_panel import annotation_badges
from synapse_nb.types import ContentBlock, Message, ToolResult, ToolSpec, Usage

X = '<script>alert("x")</script>'
ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
AT = _dt.datetime(2026, 11, 28, 6, 0, tzinfo=_dt.UTC)


def _result(*, is_error: bool = False) -> ToolResult:
    return ToolResult(content=(ContentBlock("text", text=X), ContentBlock("resource_link", uri=X, name=X)),
                      structured_content={"k": X}, is_error=is_error, duration_ms=3.0)


def _spec() -> ToolSpec:
    return ToolSpec(name=X, description=X, input_schema={"type": "object"}, server=X, original_name=X,
                    annotations={"title": X, "destructiveHint": True})


def _call(**kw: Any) -> ToolCallView:
    return ToolCallView("c1", X, {X: X}, server=X, **kw)


PRODUCERS: dict[str, Callable[[], Any]] = {
    "server card": lambda: card_html(X, {"state": X, "transport": X, "server_name": X, "server_version": X,
                                         "pid": 1, "command": X, "last_error": X, "protocol": X}),
    "resources": lambda: resources_html([{"name": X, "uri": X, "mime_type": X, "description": X}]),
    "prompts": lambda: prompts_html([{"name": X, "description": X,
                                      "arguments": [{"name": X, "description": X, "required": True}]}]),
    "logs": lambda: logs_html(X, [LogEntry("error", X, logger=X, at=AT), LogEntry("info", {X: X}, at=AT)], X),
    "logs, none": lambda: logs_html(X, [], X),
    "result": lambda: result_html(_result(), note=X),
    "result, error": lambda: result_html(_result(is_error=True)),
    "call history": lambda: rows_html([{"started_at": X, "duration_ms": 2.0, "error": X, "arguments": {X: X}}])
                            + latency_svg([{"duration_ms": 2.0, "error": X}]),
    "resource read": lambda: blocks_html([{"text": X}, {"kind": X, "mime_type": X, "data": "QQ=="}]),
    "prompt": lambda: prompt_html({"description": X, "messages": [{"role": X, "content": X}]}),
    "badges": lambda: badge(X, "red", X) + state_badge(X) + pre(X) + annotation_badges({"readOnlyHint": True}),
    "tool block, ok": lambda: tool_block(_call(status="ok", result=_result(), duration_ms=1.0), 0.0, opened=True),
    "tool block, error": lambda: tool_block(_call(status="error", error=X), 0.0),
    "tool block, streaming": lambda: tool_block(_call(status="streaming", streamed=X), 0.0),
    "progress": lambda: progress_html(1, 2, X),
    "capped text": lambda: capped_text(X),
    "turn markdown": lambda: markdown(TurnView(model=X, session=X, parts=[_call(status="ok", result=_result())],
                                               status="failed", error=X, notes=[X])),
    "%mcp call": lambda: call_bundle(X, {X: X}, _result())["text/html"],
    "%mcp read": lambda: read_bundle(X, X, [ContentBlock("resource", text=X, uri=X, mime_type="text/plain")])[
        "text/html"],
    "approval card": lambda: approval_card(_spec(), {X: X})["text/html"],
    "approval answered": lambda: answered_card(_spec(), X)["text/html"],
    "form card": lambda: form_card(ElicitationForm(X, X, (ElicitationField(X, "string", X, description=X),)))[
        "text/html"],
    "url card": lambda: url_card(UrlElicitation(X, X, "https://x.example/?q=" + X))["text/html"],
    "sampling card": lambda: sampling_card(SamplingRequest(X, (Message("user", X),), 10, system_prompt=X), X)[
        "text/html"],
    "answered": lambda: answered(X, X, X, ok=False, detail=X)["text/html"],
    "sign-in card": lambda: sign_in_card(X, "https://x.example/?q=" + X, paste=True)["text/html"],
    "sign-in link": lambda: sign_in_link_html(SignInRequest(X, "https://x.example/?q=" + X)),
    "_synapse": lambda: SynapseResult(TurnResult(text="the answer", messages=(), tool_calls=(), session_id="s",
                                                 turn_id="t", usage=Usage(), iterations=1, status="finished",
                                                 duration_ms=1.0, model=X), session=X)._repr_markdown_(),
}


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_a_script_in_any_value_arrives_as_text(name: str) -> None:
    html = str(PRODUCERS[name]())
    assert "<script" not in html
    assert ESCAPED in html or "&lt;script&gt;" in html


def test_html_escapes_what_it_is_given_and_keeps_what_is_html() -> None:
    """markupsafe's rules (format, join, +) with the entities of html.escape, so saved outputs keep their bytes."""
    assert Html("<b>{}</b>").format(X) == f"<b>{ESCAPED}</b>"
    assert Html("<i>{}</i>").format(Html("<b>ok</b>")) == "<i><b>ok</b></i>"
    assert Html("<p>") + "it's" == "<p>it&#x27;s"
    assert join([X, Html("<br>")], ", ") == f"{ESCAPED}, <br>"
    assert esc(None) == ""
    assert esc(esc("<")) == "&lt;"  # escaping once: an Html goes in as it is
