"""The notebook's answers to servers (notebook/questions/answers.py) and the `%mcp logs|roots|subscribe` input checks.

The questions go through the shell's stand-in for stdin (`ip.answers`); the kernel-level path, with a
real server and a real stdin channel, is tests/e2e/test_kernel_mcp_features.py.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from pathlib import Path

import pytest
from IPython.core.error import StdinNotImplementedError, UsageError

from synapse_nb.config import ServerConfig
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationForm, UrlElicitation, parse_form
from synapse_nb.mcp_client.sampling import SamplingRequest
from synapse_nb.notebook.commands.args import parse_connect
from synapse_nb.notebook.commands.mcp_features import parse_logs
from synapse_nb.types import Message
from tests.support.nb_shell import Shell, answers_of, demo_server_command

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer", "title": "Age", "minimum": 1, "maximum": 120, "default": 30},
        "colour": {"type": "string", "title": "Colour", "oneOf": [{"const": "r", "title": "Red"},
                                                                  {"const": "g", "title": "Green"}]},
        "ok": {"type": "boolean", "title": "Agree"},
    },
    "required": ["name"],
}


def form() -> ElicitationForm:
    return parse_form("srv", "Tell me about you", SCHEMA)


def test_a_form_is_answered_field_by_field_and_enter_takes_the_default(ip: Shell) -> None:
    answers = answers_of(ip.state)
    ip.answers[:] = ["a", "", "Ada", "two hundred", "200", "", "2", "yes"]
    answer = ip.state.runner.run(answers.elicit(form()))
    assert answer.action == "accept"
    assert answer.content == {"name": "Ada", "age": 30, "colour": "g", "ok": True}
    assert ip.prompts[1] == 'name "Name" (string, required): '  # required and empty: asked again
    assert ip.prompts[3] == 'age "Age" (integer 1..120, optional) [30]: '
    assert ip.prompts[4] == "field 'age' needs an integer; " + ip.prompts[3]
    assert ip.prompts[5] == "field 'age' must be at most 120; " + ip.prompts[3]
    assert ip.prompts[6] == 'colour "Colour" (number or value, optional): '
    card = ip.published.items[0][0]
    assert "Tell me about you" in card["text/plain"]
    assert "colour: Colour (choice) choices: 1=r (Red), 2=g (Green)" in card["text/plain"]
    assert ip.published.text() == "✓ form from srv: accepted: name=Ada, age=30, colour=g, ok=True"


@pytest.mark.parametrize(("typed", "action"), [(["d"], "decline"), (["c"], "cancel"), ([], "cancel"),
                                               (["a", ""], "cancel")])
def test_a_form_can_be_declined_or_cancelled(ip: Shell, typed: list[str], action: str) -> None:
    ip.answers[:] = typed  # [] and ["a", ""]: the input ends (EOF) before the form is complete
    answer = ip.state.runner.run(answers_of(ip.state).elicit(form()))
    assert answer.action == action
    assert answer.content is None


def test_without_stdin_a_form_is_declined_with_a_note(ip: Shell) -> None:
    def no_stdin(prompt: str) -> str:
        raise StdinNotImplementedError("no input here")

    ip.state.port.input = no_stdin
    answer = ip.state.runner.run(answers_of(ip.state).elicit(form()))
    assert answer.action == "decline"
    assert "no one can answer here (no stdin" in ip.published.text()


def test_a_url_is_a_link_confirmed_with_enter(ip: Shell) -> None:
    url = UrlElicitation("srv", "Sign in <please>", "https://example.com/a?b=1&c=2", "e1")
    ip.answers[:] = ["", "n"]
    assert ip.state.runner.run(answers_of(ip.state).elicit(url)).action == "accept"
    card = ip.published.items[0][0]
    assert '<a href="https://example.com/a?b=1&amp;c=2" target="_blank"' in card["text/html"]
    assert "Sign in &lt;please&gt;" in card["text/html"]  # the server's text is escaped
    assert ip.state.runner.run(answers_of(ip.state).elicit(url)).action == "decline"


def test_a_urls_link_looks_like_a_link_on_either_theme() -> None:
    """Issue 22, section 5: the background run's URL card showed its link as plain black text (unreadable on a
    dark theme). Both cards colour it with the palette's link colour (a variable the dark theme points at
    JupyterLab's brand colour) and underline it."""
    from synapse_nb.notebook.output.palette import colour
    from synapse_nb.notebook.questions.cards import url_card
    from synapse_nb.notebook.widgets.elicit_form import ElicitationWidget

    url = UrlElicitation("srv", "Sign in", "https://example.com/a", "e3")
    loop = asyncio.new_event_loop()
    try:
        widget = ElicitationWidget(url, loop)
        html = "".join(child.value for child in widget.children if hasattr(child, "value"))
    finally:
        loop.close()
    styled = f'style="color:{colour("info")};text-decoration:underline"'
    for shown in (html, url_card(url)["text/html"]):
        anchor = shown[shown.index("<a "):shown.index(">", shown.index("<a "))]
        assert styled in anchor, anchor
        assert colour("info").startswith("var(--snb-info,")


def call_started() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _request() -> SamplingRequest:
    return SamplingRequest("srv", (Message.user("context: summarise this"),), max_tokens=20, system_prompt="be brief")


def test_sampling_needs_a_yes_and_the_kernels_model_answers(ip: Shell, tmp_path: Path) -> None:
    script = tmp_path / "sampler.json"
    script.write_text(json.dumps([{"match": "summarise", "answer": "a summary"}]))
    ip.state.model = f"scripted:{script}"
    answers = answers_of(ip.state)
    ip.answers[:] = ["n", "y"]
    assert ip.state.runner.run(answers.approve_sampling(_request())) is False
    assert ip.state.runner.run(answers.approve_sampling(_request())) is True
    assert ip.prompts == [f"let srv use scripted:{script}? [y/n]: "] * 2
    reply = ip.state.runner.run(answers.sample(_request()))
    assert reply.text == "a summary"
    assert reply.model == f"scripted:{script}"
    text = ip.published.text()
    assert "⊘ sampling request from srv: refused" in text
    assert f"✓ sampling request from srv: answered by scripted:{script}: a summary" in text


def test_a_sampling_answer_is_recorded_as_an_llm_call_tied_to_the_running_tool_call(ip: Shell, tmp_path: Path) -> None:
    import synapse_nb
    from synapse_nb.events import ToolCallFinished, ToolCallStarted
    from synapse_nb.types import ToolCall

    script = tmp_path / "sampler.json"
    script.write_text(json.dumps([{"match": "summarise", "answer": "a summary"}]))
    ip.state.model = f"scripted:{script}"
    answers = answers_of(ip.state)
    ip.state.runner.run(answers.sample(_request()))  # no tool call running on srv: no cause known
    call = ToolCall("call-1", "srv__summarise", {})
    sink = ip.state.history_sink(True)
    sink(ToolCallStarted(session_id="s1", call=call, server="srv", tool="summarise", approval="auto"))
    ip.state.runner.run(answers.sample(_request()))
    sink(ToolCallFinished(session_id="s1", call=call, server="srv", tool="summarise", approval="auto",
                          started_at=call_started(), duration_ms=1.0))
    assert ip.state.running_call("srv") is None
    ip.state.store.flush()
    rows = synapse_nb.history().sql(
        "SELECT origin, tool_call_id, session_id, model, cost_usd, price_source FROM llm_calls "
        "ORDER BY started_at")
    assert rows.origin.tolist() == ["sampling:srv"] * 2
    assert rows.tool_call_id.isna().tolist() == [True, False]  # the first had no tool call running
    assert rows.tool_call_id.tolist()[1] == "call-1"
    assert rows.session_id.isna().tolist() == [True, False]
    assert rows.session_id.tolist()[1] == "s1"
    assert rows.model.tolist() == [str(script)] * 2
    assert rows.price_source.tolist() == ["local"] * 2  # sampling calls are priced too (a local model: $0)
    assert rows.cost_usd.tolist() == [0.0, 0.0]


def test_sampling_without_stdin_is_refused(ip: Shell) -> None:
    def no_stdin(prompt: str) -> str:
        raise StdinNotImplementedError("no input here")

    ip.state.port.input = no_stdin
    assert ip.state.runner.run(answers_of(ip.state).approve_sampling(_request())) is False
    assert 'set "sampling": "auto" for this server' in ip.published.text()


def test_resource_updates_are_kept_recorded_and_noted(ip: Shell) -> None:
    answers = answers_of(ip.state)
    answers.resource_updated("srv", "demo://a")
    assert answers.updates == [("srv", "demo://a")]
    assert ip.published.text() == "⟳ srv: resource updated demo://a"


def test_logs_arguments() -> None:
    assert parse_logs(["demo"]) == ("demo", None, "debug", False)
    assert parse_logs(["demo", "-n", "5", "--level", "WARNING"]) == ("demo", 5, "warning", False)
    assert parse_logs(["demo", "--stderr", "-n", "3"]) == ("demo", 3, "debug", True)
    for words, problem in [([], "name the server"), (["demo", "-n", "0"], "-n: takes a positive number"),
                           (["demo", "--level"], "--level needs a value"), (["demo", "--lvl", "x"], "unknown option"),
                           (["demo", "other"], "unexpected 'other'"), (["demo", "--level", "loud"], "is not one of")]:
        with pytest.raises(UsageError, match=problem):
            parse_logs(words)


def test_connect_takes_the_servers_client_policies() -> None:
    spec = parse_connect(["s", "--log-level", "info", "--sampling", "auto", "--elicitation", "decline", "--", "x"])
    assert isinstance(spec, ServerConfig)
    assert (spec.log_level, spec.sampling, spec.elicitation) == ("info", "auto", "decline")
    with pytest.raises(UsageError, match="--sampling 'always' is not one of ask, auto, deny"):
        parse_connect(["s", "--sampling", "always", "--", "x"])
    with pytest.raises(UsageError, match="--log-level applies to one server"):
        parse_connect(["--log-level", "info"])


def test_feature_magics_check_their_words(ip: Shell) -> None:
    with pytest.raises(UsageError, match="%mcp roots: name the server"):
        ip.line("mcp", "roots")
    with pytest.raises(UsageError, match="give one server and one resource URI"):
        ip.line("mcp", "subscribe demo a b")
    with pytest.raises(UsageError, match="no MCP server named 'nobody'"):
        ip.line("mcp", "logs nobody")


def test_with_no_cell_waiting_a_widget_form_asks(ip: Shell) -> None:
    """A background run's tool elicits while no cell blocks: an input request would hang the kernel, so the
    form is a widget in the cell, answered through ElicitationForm.answer (defaults applied)."""
    import asyncio

    answers = answers_of(ip.state)

    async def ask_and_fill() -> ElicitationAnswer:
        asking = asyncio.ensure_future(answers.elicit(form()))  # not through the runner: no foreground cell
        for _ in range(20):  # let the task run up to its wait on the widget (no timing: it only needs turns)
            if answers.asking:
                break
            await asyncio.sleep(0)
        (widget,) = answers.asking
        assert widget.form is not None
        widget.form.load({"name": "Ada"})
        widget.accept_button.click()
        return await asking

    answer = asyncio.run(ask_and_fill())
    assert answer.action == "accept"
    assert answer.content == {"name": "Ada", "age": 30}
    assert ip.prompts == []
    assert answers.asking == []
    (bundle, _, _), *_ = ip.published.items
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_an_interrupt_at_a_question_cancels_it(ip: Shell) -> None:
    """The server's question runs in the SDK's task beside the command the cell waits on; an interrupt at
    the question (the line source raises KeyboardInterrupt, as Ctrl-C would) cancels that command, and
    the question ends cancelled (a form) or refused (sampling)."""
    def interrupted(prompt: str) -> str:
        raise KeyboardInterrupt

    ip.state.port.input = interrupted
    loop = ip.state.runner.loop
    questions = (answers_of(ip.state).elicit(form()), answers_of(ip.state).approve_sampling(_request()))
    outcomes: list[object] = []
    for question in questions:
        asking = loop.create_task(question)  # type: ignore[arg-type]

        async def cell(asking: asyncio.Task[object] = asking) -> object:
            return await asyncio.shield(asking)

        with pytest.raises(KeyboardInterrupt):
            ip.state.runner.run(cell())
        outcomes.append(loop.run_until_complete(asyncio.wait_for(asking, 60)))
    (elicited, sampled) = outcomes
    assert isinstance(elicited, ElicitationAnswer)
    assert elicited.action == "cancel"
    assert sampled is False


def test_only_http_links_are_clickable(ip: Shell) -> None:
    ip.answers[:] = ["n"]
    ip.state.runner.run(answers_of(ip.state).elicit(UrlElicitation("srv", "go", "javascript:alert(1)")))
    card = ip.published.items[0][0]["text/html"]
    assert "<a " not in card
    assert "<code>javascript:alert(1)</code>" in card


@pytest.mark.process
def test_a_link_in_a_blocking_cell_ends_when_the_server_completes_it(ip: Shell) -> None:
    """The input box is read off the loop (stdin_wait.py), so the server's `notifications/elicitation/complete`
    ends the wait while the box is still open: the call goes on, the card says so, the history says by whom."""
    ip.line("mcp", f"connect demo -- {demo_server_command()} --legacy")  # --legacy: the server sends requests
    boxed, release = ip.unanswered_box("n")  # the user never answers (until the test is over)

    async def cell() -> str:
        call = asyncio.ensure_future(ip.state.hub.call("demo__sign_in", {"url": "https://example.com/sign-in"}))
        assert await asyncio.to_thread(boxed.wait, 60), "the link's input box was never asked"
        assert not call.done()
        fired = await ip.state.hub.call("demo__fire", {"signal": "complete"})  # the loop runs: a second call
        assert fired.text == "fired complete"
        return (await asyncio.wait_for(call, 60)).text

    try:
        text = ip.state.runner.run(cell())
    finally:
        release.set()
    assert text.endswith(": accept")  # the server was answered without the user confirming
    assert ip.prompts == ["press Enter when done, n to decline, c to cancel: "]
    card, card_id, _ = next(item for item in ip.published.items if "snb-elicit-card" in item[0].get("text/html", ""))
    assert 'href="https://example.com/sign-in"' in card["text/html"]
    assert ip.published.items[-1][1] == card_id
    assert ip.published.items[-1][0]["text/plain"] == (
        "✓ link from demo: completed by the server: the input box is no longer needed: press Enter in it")
    history = ip.state.history()
    assert history is not None
    events = history.sql("SELECT event, detail FROM server_events WHERE event LIKE 'elicitation%' ORDER BY \"at\"")
    assert list(events.event) == ["elicitation_complete", "elicitation"]
    assert json.loads(events.detail.iloc[-1]) == {"mode": "url", "message": "Sign in to the shop", "action": "accept",
                                                  "by": "server"}
    answers = ip.state.answers
    assert answers is not None
    assert answers.in_box == []


def test_a_link_stops_waiting_once_the_cell_stops_waiting(ip: Shell) -> None:
    """An interrupt cancels the command the cell waited on; the question the server asked under it is
    cancelled too (the reader gives up), so no input box is read for a call nobody waits for."""
    url = UrlElicitation("srv", "Sign in", "https://example.com/a", "e2")
    boxed, release = ip.unanswered_box("")
    answers = answers_of(ip.state)
    loop = ip.state.runner.loop

    async def cell() -> None:  # the command the cell waits on: interrupted once the box is open
        await asyncio.to_thread(boxed.wait, 60)
        raise asyncio.CancelledError

    asking = loop.create_task(answers.elicit(url))  # runs in the SDK's task, not the cell's
    try:
        with pytest.raises((asyncio.CancelledError, KeyboardInterrupt)):
            ip.state.runner.run(cell())
        answer = loop.run_until_complete(asyncio.wait_for(asking, 60))
    finally:
        release.set()
    assert answer.action == "cancel"
    assert ip.published.text() == "⊘ link from srv: cancelled: the cell stopped waiting for it (interrupted)"


@pytest.mark.parametrize(("fmt", "good", "bad"), [
    ("email", "ada@example.org", "ada at example"), ("email", "a.b@mail.example.co", "ada@localhost"),
    ("uri", "https://example.org/x?y=1", "not a uri"), ("uri", "mailto:ada@example.org", "example.org"),
    ("date", "2026-02-28", "2026-02-30"), ("date", "1815-12-10", "10/12/1815"),
    ("date-time", "2026-03-31T14:30:00Z", "2026-03-31"),
])
def test_string_formats_are_checked(fmt: str, good: str, bad: str) -> None:
    from synapse_nb.notebook.questions.formats import format_problem

    assert format_problem(fmt, good) is None
    problem = format_problem(fmt, bad)
    assert problem is not None
    assert problem.startswith("is not a")
    assert format_problem("hostname", "anything at all") is None  # formats the spec does not list pass
