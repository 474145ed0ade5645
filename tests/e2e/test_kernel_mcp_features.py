"""What the reference server-everything asks of a real kernel: a form answered through stdin, sampling by the
kernel's model, roots, logs and resource updates (node, stdio, all in one kernel)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kernel_session import Kernel, running_kernel
from tests.support.npm_servers import EVERYTHING, node_for

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]



@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    node = node_for(EVERYTHING)
    tmp = tmp_path_factory.mktemp("kernel")
    (tmp / "sampler.json").write_text(json.dumps([{"match": "context:", "answer": "a scripted reply"}]))
    with running_kernel(tmp) as k:
        k.ok("%load_ext synapse_nb")
        k.ok("%synapse model scripted:sampler.json")
        connect = k.ok(f"%mcp connect everything --log-level debug --roots . -- {node} {EVERYTHING} stdio", timeout=120)
        assert "everything" in connect.text()
        yield k


LONG_FORM = "fill in the form? [a(ccept)/j(son)/d(ecline)/c(ancel)]: "  # 14 fields: one JSON answer is offered


def _form_answers(prompt: str) -> str:
    if prompt.startswith("fill in the form?"):
        return "a"
    if prompt.startswith('name "String" (string, required)'):
        return "Ada Lovelace"
    if prompt.startswith('check "Boolean" (y/n'):
        return "y"
    if prompt.startswith('integer "Integer" (integer'):
        return "7"
    if prompt.startswith('email "String with email format" (string, email, optional)'):
        return "ada at example"  # not an email: asked again, with what is wrong
    if prompt.startswith("field 'email' is not an email address"):
        return "ada@example.org"
    if prompt.startswith('birthdate "String with date format" (string, date, optional)'):
        return "1815-12-10"
    if prompt.startswith('titledSingleSelectEnum "Titled Single Select Enum"'):
        return "3"  # by number: hero-3 (Wonder Woman)
    return ""  # Enter: the default, or nothing for an optional field


def test_elicitation_form_is_answered_field_by_field_through_stdin(kernel: Kernel) -> None:
    run = kernel.ok("%mcp call everything.trigger-elicitation-request {}", allow_stdin=True, answer=_form_answers)
    assert run.prompts[0] == LONG_FORM
    assert 'firstLine "String with default" (string, optional) [It was a dark and stormy night.]: ' in run.prompts
    assert any(p.startswith('integer "Integer" (integer') and p.endswith("optional) [42]: ") for p in run.prompts)
    retried = [p for p in run.prompts if p.startswith("field 'email'")]
    assert retried == ["field 'email' is not an email address, e.g. ada@example.org; "
                       'email "String with email format" (string, email, optional): ']
    card = next(d["data"] for d in run.displays if "snb-elicit-card" in d["data"].get("text/html", ""))
    assert "Please provide inputs for the following fields:" in card["text/plain"]
    assert "choices: 1=hero-1 (Superman)" in card["text/plain"]
    text = run.text()
    assert "✓ form from everything: accepted" in text
    raw = text[text.index("Raw result"):]
    assert '"action": "accept"' in raw
    assert '"name": "Ada Lovelace"' in raw
    assert '"check": true' in raw
    assert '"integer": 7' in raw
    assert '"email": "ada@example.org"' in raw
    assert '"birthdate": "1815-12-10"' in raw
    assert '"titledSingleSelectEnum": "hero-3"' in raw
    assert '"firstLine": "It was a dark and stormy night."' in raw  # Enter took the default (SEP-1034)
    assert '"untitledMultipleSelectEnum": [\n' in raw
    assert '"Guitar"' in raw


def test_a_long_form_takes_one_json_answer_checked_like_the_fields(kernel: Kernel) -> None:
    typed = iter(["j", '{"name": "Ada", "homepage": "not a uri"}',
                  '{"name": "Ada", "homepage": "https://example.org/ada", "titledSingleSelectEnum": "Wonder Woman"}'])
    run = kernel.ok("%mcp call everything.trigger-elicitation-request {}", allow_stdin=True,
                    answer=lambda prompt: next(typed))
    assert run.prompts[0] == LONG_FORM
    assert run.prompts[1].startswith("one JSON object with name, check?, firstLine?, email?")
    assert run.prompts[2].startswith("field 'homepage' is not a URI, e.g. https://example.org/page; one JSON object")
    assert len(run.prompts) == 3  # not one prompt per field
    raw = run.text()[run.text().index("Raw result"):]
    assert '"name": "Ada"' in raw
    assert '"homepage": "https://example.org/ada"' in raw
    assert '"titledSingleSelectEnum": "hero-3"' in raw  # by its title


def test_elicitation_decline_and_no_stdin(kernel: Kernel) -> None:
    declined = kernel.ok("%mcp call everything.trigger-elicitation-request {}", allow_stdin=True,
                         answer=lambda prompt: "d")
    assert len(declined.prompts) == 1
    assert "⊘ form from everything: declined" in declined.text()
    assert '"action": "decline"' in declined.text()
    no_stdin = kernel.ok("%mcp call everything.trigger-elicitation-request {}")
    assert no_stdin.prompts == []
    assert "no one can answer here (no stdin" in no_stdin.text()
    assert '"action": "decline"' in no_stdin.text()


def test_a_form_asked_during_an_agent_turn_is_answered_in_that_cell(kernel: Kernel, tmp_path: Path) -> None:
    script = tmp_path / "asker.json"
    script.write_text(json.dumps([{"match": "form", "tool": "everything__trigger-elicitation-request",
                                   "arguments": {}, "answer": "the server said: {result}"}]))
    run = kernel.ok(f"%%synapse --model scripted:{script} --approve auto --session forms\nfill in the form",
                    allow_stdin=True, answer=_form_answers)
    assert run.prompts[0] == LONG_FORM
    assert "✓ form from everything: accepted" in run.text()
    assert "Ada Lovelace" in run.text()


def test_url_elicitation_shows_a_link_and_waits_for_enter(kernel: Kernel) -> None:
    call = '%mcp call everything.trigger-url-elicitation {"url": "https://example.com/sign-in"}'
    done = kernel.ok(call, allow_stdin=True, answer=lambda prompt: "")
    assert done.prompts == ["press Enter when done, n to decline, c to cancel: "]
    card = next(d["data"] for d in done.displays if "snb-elicit-card" in d["data"].get("text/html", ""))
    assert '<a href="https://example.com/sign-in" target="_blank"' in card["text/html"]
    assert "Please open the link to complete this action." in card["text/plain"]
    assert "✓ link from everything: accepted" in done.text()
    assert "User completed the URL elicitation flow" in done.text()
    refused = kernel.ok(call, allow_stdin=True, answer=lambda prompt: "n")
    assert "⊘ link from everything: declined" in refused.text()


def test_sampling_is_approved_through_stdin_and_answered_by_the_kernels_model(kernel: Kernel) -> None:
    call = '%mcp call everything.trigger-sampling-request {"prompt": "write a haiku", "maxTokens": 50}'
    yes = kernel.ok(call, allow_stdin=True, answer=lambda prompt: "y")
    assert yes.prompts == ["let everything use scripted:sampler.json? [y/n]: "]
    card = next(d["data"] for d in yes.displays if "snb-elicit-card" in d["data"].get("text/html", ""))
    assert "write a haiku" in card["text/plain"]
    assert "system: You are a helpful test server." in card["text/plain"]
    text = yes.text()
    assert "✓ sampling request from everything: approved for scripted:sampler.json" in text
    assert "✓ sampling request from everything: answered by scripted:sampler.json" in text
    assert '"text": "a scripted reply"' in text  # what the server got back, in the tool's result
    recorded = kernel.ok(
        "import synapse_nb\n_h = synapse_nb.history()\n"
        "print(_h.sql('SELECT origin FROM llm_calls WHERE origin IS NOT NULL').origin.tolist())\n"
        "print(_h.sql('SELECT count(*) FROM llm_calls l JOIN tool_calls t USING (tool_call_id) "
        "WHERE t.tool = \\'trigger-sampling-request\\'').iloc[0, 0])"
    )
    # one LLM call made for the server (the agent's own have no origin), tied to the tool call that caused it
    assert recorded.stdout.splitlines() == ["['sampling:everything']", "1"]
    no = kernel.execute(call, allow_stdin=True, answer=lambda prompt: "n")
    assert "⊘ sampling request from everything: refused" in no.text()
    assert "a scripted reply" not in no.text()
    no_stdin = kernel.execute(call)
    assert no_stdin.prompts == []
    assert "no one can answer here (no stdin" in no_stdin.text()


WAIT = """
import asyncio, time
_deadline = time.monotonic() + 20
while not ({condition}) and time.monotonic() < _deadline:
    await asyncio.sleep(0.05)
print(bool({condition}))
"""


def test_logs_are_kept_filtered_and_shown(kernel: Kernel) -> None:
    kernel.ok("%mcp subscribe everything demo://resource/static/document/architecture.md")  # the server logs it
    shown = kernel.ok("%mcp logs everything --level info -n 5")
    assert "Received Subscribe Resource request for URI" in shown.final_outputs()[0]["text/html"]  # a DataFrame
    frame = kernel.ok("_df = get_ipython().run_line_magic('mcp', 'logs everything --level info -n 5')\n"
                      "print(list(_df.columns), list(_df.message))")  # the server's roots note may come after it
    assert frame.stdout.startswith("['at', 'level', 'logger', 'message'] [")
    assert ("'Received Subscribe Resource request for URI: demo://resource/static/document/architecture.md"
            in frame.stdout)
    ring = "get_ipython()._synapse_nb_state.hub.logs('everything')"
    kernel.ok(f"_before = len({ring})")
    toggled = kernel.ok("%mcp call everything.toggle-simulated-logging {}")
    assert "Started simulated" in toggled.text()
    waited = kernel.ok(WAIT.format(condition=f"len({ring}) > _before"))  # it sends one at once, then every 5 s
    assert waited.stdout.strip() == "True"
    kernel.ok("%mcp call everything.toggle-simulated-logging {}")  # off again
    # The simulated messages come at random levels, emergency included: the filter is checked against the ring.
    top = kernel.ok(f"print(sum(e.level == 'emergency' for e in {ring}))")
    emergencies = int(top.stdout.strip())
    filtered = kernel.execute("%mcp logs everything --level emergency")
    if emergencies == 0:
        assert "no log messages from everything at emergency or above" in filtered.stdout
    else:
        counted = kernel.ok("_em = get_ipython().run_line_magic('mcp', 'logs everything --level emergency')\n"
                            "print(sorted(set(_em.level)), len(_em))")
        assert counted.stdout.strip() == f"['emergency'] {emergencies}"
    info = kernel.ok("_inf = get_ipython().run_line_magic('mcp', 'logs everything --level info -n 500')\n"
                     "print(sorted(set(_inf.level) & {'debug'}))")
    assert info.stdout.strip() == "[]"  # nothing below the floor
    bad = kernel.execute("%mcp logs everything --level loud")
    assert bad.stderr.startswith(
        "UsageError: %mcp logs NAME [-n N] [--level LEVEL | --stderr]: --level 'loud' is not one of")
    unknown = kernel.execute("%mcp logs nobody")
    assert unknown.stderr.startswith("UsageError: no MCP server named 'nobody'")


def test_roots_are_shown_and_replaced(kernel: Kernel, tmp_path: Path) -> None:
    shown = kernel.ok("%mcp roots everything")
    assert shown.stdout.startswith("roots of everything:\n  file:///")
    kernel.ok(f"%mcp roots everything {tmp_path}")
    assert kernel.ok("%mcp roots everything").stdout == f"roots of everything:\n  {tmp_path.resolve().as_uri()}\n"
    listed = ""
    for _ in range(50):  # the server fetches the new list after our roots/list_changed; each call is a round trip
        listed = kernel.ok("%mcp call everything.get-roots-list {}").text()
        if tmp_path.resolve().as_uri() in listed:
            break
    assert tmp_path.resolve().as_uri() in listed
    missing = kernel.execute("%mcp roots everything /no/such/folder")
    assert missing.stderr.startswith("UsageError: %mcp roots everything: '/no/such/folder' is not a directory")


def test_subscription_updates_are_seen_and_listed(kernel: Kernel) -> None:
    uri = "demo://resource/static/document/architecture.md"
    subscribed = kernel.ok(f"%mcp subscribe everything {uri}")
    assert subscribed.stdout.startswith(f"✓ subscribed to {uri} on everything")
    toggled = kernel.ok("%mcp call everything.toggle-subscriber-updates {}")
    updates = "get_ipython()._synapse_nb_state.answers.updates"
    waited = kernel.ok(WAIT.format(condition=f"('everything', {uri!r}) in {updates}"))
    assert waited.stdout.strip() == "True"
    # the note lands in the cell running when the update arrives (the toggle's, or the waiting one)
    assert f"⟳ everything: resource updated {uri}" in toggled.text() + waited.text()
    kernel.ok("%mcp call everything.toggle-subscriber-updates {}")  # off again
    assert f"⟳ {uri}" in kernel.ok("%mcp subscribe everything").stdout
    kernel.ok(f"%mcp unsubscribe everything {uri}")
    events = kernel.ok("import synapse_nb\nprint(synapse_nb.history().sql(\"select count(*) from server_events "
                       "where event = 'resource_updated'\").iloc[0, 0])")
    assert int(events.stdout) >= 1
    bad = kernel.execute("%mcp unsubscribe everything")
    assert bad.stderr.strip() == ("UsageError: %mcp unsubscribe: give one server and one resource URI, "
                                  "e.g. %mcp unsubscribe everything demo://resource/1")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-x"]))
