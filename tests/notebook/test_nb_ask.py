"""`%%synapse` in an InteractiveShell: options, sessions, approvals, errors, interrupts and background runs."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from typing import Any

import pytest
from IPython.core.error import StdinNotImplementedError, UsageError

import synapse_nb
from synapse_nb.notebook.commands.ask import CellInterrupted, TurnError
from synapse_nb.notebook.turns.result import BackgroundRun, SynapseResult

Script = Callable[[Any], str]

TOOLS = """
import synapse_nb

@synapse_nb.tool
def shout(text: str) -> str:
    '''Shout the text.'''
    return text.upper()

@synapse_nb.tool(annotations={"destructiveHint": True})
def wipe(table: str) -> str:
    '''Pretend to delete a table.'''
    return f"wiped {table}"
"""

# Top-level await in the shell: let the background run go until it asks for approval (bounded).
WAIT_FOR_APPROVAL_REQUEST = (
    "import asyncio\nasync def _wait():\n    while not _synapse.controls.pending:\n        await asyncio.sleep(0.01)\n"
    "await asyncio.wait_for(_wait(), 10)"
)

SHOUT = [{"match": "shout (\\w+)", "tool": "shout", "arguments": {"text": "{1}"}, "answer": "It says {result}."},
         {"match": "wipe (\\w+)", "tool": "wipe", "arguments": {"table": "{1}"}, "answer": "Result: {result}"},
         "Nothing to shout about."]


def turns() -> Any:
    return synapse_nb.history().turns()


def test_a_prompt_streams_and_leaves_its_result_in_underscore_synapse(ip: Any, script: Script) -> None:
    ip.run(TOOLS)
    assert ip.cell(f"synapse --model {script(SHOUT)}", "please shout hello") is None
    result = ip.ns["_synapse"]
    assert isinstance(result, SynapseResult)
    assert result.text == "It says HELLO."
    assert result.status == "finished"
    assert result.iterations == 2
    calls = result.tool_calls
    assert list(calls[["tool", "result_text", "is_error", "approval"]].iloc[0]) == ["shout", "HELLO", False, "auto"]
    assert calls.iloc[0]["arguments"] == {"text": "hello"}
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.usage.total_tokens > 0
    assert result.session_id
    assert "It says HELLO." in result._repr_markdown_()
    updates = [item for item in ip.published.items if item[2]]
    assert updates, "the answer is updated in place while it streams"
    [final] = ip.published.final
    assert re.search(r"<summary><svg.*?</svg> <code>shout\(text=&quot;hello&quot;\)</code>.*?✓", final["text/markdown"])
    assert "(offline scripted model)" in final["text/markdown"]
    assert "session main" in final["text/plain"]
    row = turns().iloc[-1]
    assert (row.status, row.prompt, row.session_id) == ("finished", "please shout hello", result.session_id)


def test_underscore_synapse_wraps_the_result_agent_ask_returned(ip: Any, script: Script, monkeypatch: Any) -> None:
    from synapse_nb.agent.orchestrator import Agent

    returned: list[Any] = []
    ask = Agent.ask

    async def spy(self: Agent, prompt: Any, options: Any = None) -> Any:
        result = await ask(self, prompt, options)
        returned.append(result)
        return result

    monkeypatch.setattr(Agent, "ask", spy)
    ip.run(TOOLS)
    ip.cell(f"synapse --model {script(SHOUT)}", "please shout hello")
    result = ip.ns["_synapse"]
    [turn] = returned
    assert result.turn is turn  # the agent's own result object, not one rebuilt from a second list of events
    assert ip.state.sessions["main"].last_result is turn
    assert (result.text, result.messages, result.session_id, result.usage, result.status, result.iterations,
            result.duration_ms, result.turn_id, result.model, result.calls) == (
        turn.text, turn.messages, turn.session_id, turn.usage, turn.status, turn.iterations, turn.duration_ms,
        turn.turn_id, turn.model, turn.tool_calls)
    assert list(result.tool_calls["tool_call_id"]) == [c.call.id for c in turn.tool_calls] != []
    assert (result.session, result.format) == ("main", "markdown")  # what only the notebook knows


def test_with_no_key_and_no_model_the_offline_demo_model_answers(ip: Any) -> None:
    ip.cell("synapse", "hello?")
    result = ip.ns["_synapse"]
    assert result.model == "scripted:demo"
    assert "offline" in result.text
    assert "scripted:demo (offline scripted model)" in ip.published.text()


def test_the_session_continues_unless_another_is_named(ip: Any, script: Script) -> None:
    model = script(["first answer", "second answer"])  # the n-th reply of a conversation plays turn n
    ip.cell(f"synapse --model {model}", "one")
    ip.cell(f"synapse --model {model}", "two")
    assert ip.ns["_synapse"].text == "second answer"
    main_id = ip.ns["_synapse"].session_id
    ip.cell(f"synapse --model {model} --session other --out other", "three")
    assert ip.ns["other"].text == "first answer"
    assert ip.ns["other"].session_id != main_id
    ip.line("synapse", "session new fresh")
    ip.cell(f"synapse --model {model}", "four")
    assert ip.ns["_synapse"].text == "first answer"
    assert ip.ns["_synapse"].session == "fresh"
    ip.line("synapse", "session switch main")
    ip.cell(f"synapse --model {model}", "five")
    assert ip.ns["_synapse"].session_id == main_id
    assert len(ip.state.sessions["main"].messages) == 6
    names = synapse_nb.history().sessions()["name"].tolist()
    assert sorted(names) == ["fresh", "main", "other"]


def test_prompt_interpolates_notebook_values(ip: Any, script: Script) -> None:
    ip.run("city = 'Lyon'")
    ip.cell(f"synapse --model {script(['ok'])}", "weather in {city} and {nowhere}?")
    assert ip.ns["_synapse"].messages[0].content == "weather in Lyon and {nowhere}?"


def test_system_prompt_and_iteration_limit(ip: Any, script: Script) -> None:
    ip.run(TOOLS)
    loop = script([{"tool": "shout", "arguments": {"text": "again"}}])  # asks for a tool forever
    with pytest.raises(TurnError, match="MaxIterationsError: the model still asked for tools after 2 iterations"):
        ip.cell(f"synapse --model {loop} --max-iterations 2 --system 'Be terse.'", "go")
    assert ip.ns["_synapse"].status == "failed"
    assert turns().iloc[-1].status == "failed"
    messages = synapse_nb.history().messages()
    assert messages[messages.role == "system"].content.tolist() == ["Be terse."]


def test_no_tools_and_tool_patterns(ip: Any, script: Script) -> None:
    ip.run(TOOLS)
    model = script(SHOUT)
    ip.cell(f"synapse --model {model} --no-tools", "shout hi")
    assert ip.ns["_synapse"].text == "Nothing to shout about."
    ip.cell(f"synapse --model {model} --tools sh*", "shout hi")
    assert ip.ns["_synapse"].text == "It says HI."
    with pytest.raises(UsageError, match=r"--tools 'nothing\*' matches no tool; tools now: shout, wipe"):
        ip.cell(f"synapse --model {model} --tools nothing*", "shout hi")


def test_formats(ip: Any, script: Script) -> None:
    json_model = script(['{"n": [1, 2]}'])
    ip.cell(f"synapse --model {json_model} --format json", "numbers")
    assert ip.ns["_synapse"].data == {"n": [1, 2]}
    ip.published.clear()
    ip.cell(f"synapse --model {script(['plain *text*'])} --format text --session t", "x")
    assert set(ip.published.final[-1]) == {"text/plain"}
    code_answer = "Here you go:\n\n```python\nprint('hi')\n```\n"
    ip.cell(f"synapse --model {script([code_answer])} --format code --session c", "write code")
    assert ip.shell.rl_next_input == "print('hi')"
    assert ip.ns["_synapse"].code == "print('hi')"


@pytest.mark.parametrize(
    ("answer", "inserted", "said"),
    [
        ("SQL first:\n\n```sql\nSELECT 1\n```\n\nthen:\n\n```python\nx = 1\n```\n", "x = 1",
         "inserted a cell below with the answer's Python code"),
        ("```\nprint('unlabelled')\n```", "print('unlabelled')", "inserted a cell below"),
        ("```\nSELECT * FROM orders\n```", None, "no Python code block in the answer (found: unlabelled)"),
        ("Run this:\n\n```sql\nSELECT 1\n```\n```bash\nls\n```", None,
         "no Python code block in the answer (found: sql, bash); no cell inserted"),
        ("No code at all.", None, "no code block in the answer; no cell inserted"),
    ],
)
def test_format_code_inserts_only_python(
    ip: Any, script: Script, capsys: pytest.CaptureFixture[str], answer: str, inserted: str | None, said: str
) -> None:
    ip.shell.rl_next_input = None
    capsys.readouterr()
    ip.cell(f"synapse --model {script([answer])} --format code", "write code")
    assert ip.shell.rl_next_input == inserted  # never SQL (or any other language) in a Python cell
    assert ip.ns["_synapse"].code == inserted
    assert said in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "body", "needle"),
    [
        ("synapse", "   \n", "missing prompt"),
        ("synapse --frobnicate", "hi", "unknown option --frobnicate"),
        ("synapse --approve sometimes", "hi", "not one of auto, ask, deny"),
        ("synapse --model gpt-4.1", "hi", "PROVIDER:MODEL"),
        ("synapse --model openai:gpt-4.1-mini", "hi", "set OPENAI_API_KEY"),
        ("synapse --model scripted:/no/such/script.json", "hi", "cannot read script file"),
    ],
)
def test_bad_cells_are_one_line_usage_errors_and_record_nothing(ip: Any, line: str, body: str, needle: str) -> None:
    with pytest.raises(UsageError) as caught:
        ip.cell(line, body)
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)
    assert "_synapse" not in ip.ns
    history = synapse_nb.history()
    assert history.sessions().empty
    assert history.turns().empty
    assert history.messages().empty


def test_no_history_records_nothing_of_that_turn(ip: Any, script: Script) -> None:
    model = script(["a", "b"])
    ip.cell(f"synapse --model {model} --no-history", "secret question")
    assert synapse_nb.history().turns().empty
    ip.cell(f"synapse --model {model}", "public question")
    history = synapse_nb.history()
    assert history.turns().prompt.tolist() == ["public question"]
    assert history.sessions().name.tolist() == ["main"]  # the session row came with its first recorded turn
    assert "secret question" not in history.messages().content.tolist()


@pytest.mark.parametrize(
    ("answers", "approval", "text"),
    [(["y"], "approved", "Result: wiped orders"), (["n"], "denied", "Result: denied by user"),
     (["maybe", "a"], "always", "Result: wiped orders")],
)
def test_destructive_tools_ask_on_stdin(ip: Any, script: Script, answers: list[str], approval: str, text: str) -> None:
    ip.run(TOOLS)
    ip.answers = answers
    ip.cell(f"synapse --model {script(SHOUT)}", "wipe orders")
    assert ip.prompts[0] == "allow wipe? [y/n/a]: "  # short: the card above it says the rest
    card = next(b for b, _, update in ip.published.items if "snb-approval-card" in b.get("text/html", ""))
    assert "<code>wipe</code>" in card["text/html"]
    assert "destructive</span>" in card["text/html"]
    assert "&quot;table&quot;: &quot;orders&quot;" in card["text/html"]
    assert "<code>a</code> always" in card["text/html"]
    assert '  "table": "orders"' in card["text/plain"]
    decided = {"denied": "⊘ wipe: denied", "approved": "✓ wipe: approved", "always": "✓ wipe: approved for the session"}
    assert ip.published.final[0]["text/plain"] == decided[approval]  # the saved card shows the decision
    result = ip.ns["_synapse"]
    assert result.tool_calls.approval.tolist() == [approval]
    assert result.text == text


def test_always_is_remembered_for_the_session(ip: Any, script: Script) -> None:
    ip.run(TOOLS)
    ip.answers = ["a"]
    ip.cell(f"synapse --model {script(SHOUT)}", "wipe orders")
    ip.cell(f"synapse --model {script(SHOUT)}", "wipe customers")
    assert len(ip.prompts) == 1
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["auto"]


def test_approve_option_overrides_the_policy(ip: Any, script: Script) -> None:
    ip.run(TOOLS)
    ip.cell(f"synapse --model {script(SHOUT)} --approve deny", "shout hi")
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["denied"]
    assert not ip.prompts
    ip.answers = ["y"]
    ip.cell(f"synapse --model {script(SHOUT)} --approve ask", "shout hi")
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["approved"]
    assert len(ip.prompts) == 1
    ip.cell(f"synapse --model {script(SHOUT)} --approve auto", "wipe orders")
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["auto"]
    assert len(ip.prompts) == 1


def test_without_stdin_approval_is_denied_with_a_note(ip: Any, script: Script) -> None:
    def no_stdin(prompt: str) -> str:
        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")

    ip.state.port.input = no_stdin
    ip.run(TOOLS)
    ip.cell(f"synapse --model {script(SHOUT)}", "wipe orders")
    assert ip.ns["_synapse"].tool_calls.approval.tolist() == ["denied"]
    assert "cannot answer prompts (no stdin)" in ip.published.markdown()


def test_interrupt_cancels_the_turn_records_it_and_the_next_cell_works(ip: Any, script: Script) -> None:
    ip.run(
        "import asyncio, os, signal, synapse_nb\n"
        "@synapse_nb.tool\n"
        "async def slow() -> str:\n"
        "    '''Take long.'''\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # the user presses Stop while the tool runs\n"
        "    await asyncio.sleep(30)\n"
        "    return 'late'\n"
    )
    model = script([{"match": "slow", "tool": "slow", "arguments": {}, "answer": "done"}, "fine"])
    with pytest.raises(CellInterrupted, match="servers stay connected"):
        ip.cell(f"synapse --model {model}", "be slow")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    result = ip.ns["_synapse"]
    assert result.status == "cancelled"
    assert result.tool_calls.error.tolist() == ["cancelled"]
    assert "■ cancelled" in ip.published.text()
    assert turns().status.tolist() == ["cancelled"]
    ip.cell(f"synapse --model {model}", "anything else")
    assert ip.ns["_synapse"].text == "fine"
    assert CellInterrupted("x")._render_traceback_() == ["\x1b[0;31mKeyboardInterrupt\x1b[0m: x"]


def test_background_run_returns_a_handle_awaitable_later(ip: Any, script: Script) -> None:
    ip.cell(f"synapse --model {script(['background answer'])} --background --out job", "take your time")
    handle = ip.ns["job"]
    assert isinstance(handle, BackgroundRun)
    assert ip.ns["_synapse"] is handle
    assert repr(handle).startswith("<BackgroundRun ")
    with pytest.raises(UsageError, match="busy with a background run"):
        ip.cell(f"synapse --model {script(['x'])}", "meanwhile")
    ip.run("answer = await job")
    assert ip.ns["answer"].text == "background answer"
    assert handle.status == "finished"
    assert handle.result().text == "background answer"
    assert ip.published.final[0]["text/plain"].startswith("background answer")


def test_a_background_run_ends_with_one_footer(ip: Any, script: Script) -> None:
    """Issue 22, section 5: a background run ended with the turn's footer and, below it, the controls' status line
    saying it again. The controls' line is the one footer (it is where the run's state showed all along)."""
    ip.cell(f"synapse --model {script(['background answer'])} --background --out job --session solo", "go")
    ip.run("answer = await job")
    turn = ip.published.final[0]
    _html, controls = ip.ns["job"].controls.snapshot()
    shown = turn["text/plain"] + "\n" + turn["text/markdown"] + "\n" + controls
    assert shown.count("session solo") == 1, shown
    assert shown.count("iteration") == 1, shown
    assert "snb-footer" not in turn["text/markdown"]
    assert controls.startswith("background run: finished · "), controls
    assert "1 iteration" in controls, controls
    assert "session solo" in controls, controls


def test_foreground_and_background_runs_take_the_same_turn_path(
    ip: Any, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both kinds of run go through commands/ask.py's one `run_turn`; only who asks approval differs."""
    from synapse_nb.notebook.commands import ask as ask_cmd

    ran: list[tuple[str, str, str]] = []
    real = ask_cmd.run_turn

    async def spy(turn: Any, told: Any, **kwargs: Any) -> Any:
        result, interrupted = await real(turn, told, **kwargs)
        asker = told.ask.ask  # who asks, inside the wrapper that tells the display while it waits
        ran.append((turn.plan.prompt, type(asker).__name__, result.text))
        return result, interrupted

    monkeypatch.setattr(ask_cmd, "run_turn", spy)
    ip.run(TOOLS)
    model = script(SHOUT)
    ip.cell(f"synapse --model {model}", "shout here")
    ip.cell(f"synapse --model {model} --background --session other --out job", "shout there")
    ip.run("answer = await job")
    assert ip.ns["answer"].text == "It says THERE."
    assert ran == [("shout here", "StdinApproval", "It says HERE."),
                   ("shout there", "ButtonsApproval", "It says THERE.")]


def test_background_run_can_be_cancelled(ip: Any, script: Script) -> None:
    ip.run(
        "import asyncio, synapse_nb\n"
        "started = asyncio.Event()\n"
        "@synapse_nb.tool\n"
        "async def wait_long() -> str:\n"
        "    '''Wait.'''\n"
        "    started.set()\n"
        "    await asyncio.sleep(30)\n"
        "    return 'late'\n"
    )
    model = script([{"match": "wait", "tool": "wait_long", "arguments": {}, "answer": "done"}])
    ip.cell(f"synapse --model {model} --background", "wait please")
    handle = ip.ns["_synapse"]
    ip.run("await asyncio.wait_for(started.wait(), 10)")
    assert handle.status == "running"
    handle.cancel()
    result = handle.result(timeout=10)
    assert result.status == "cancelled"
    assert handle.status == "cancelled"
    assert turns().status.tolist() == ["cancelled"]


def test_unload_cancels_background_runs(ip: Any, script: Script) -> None:
    ip.run(
        "import asyncio, synapse_nb\n"
        "started, stopped = asyncio.Event(), []\n"
        "@synapse_nb.tool\n"
        "async def wait_long() -> str:\n"
        "    '''Wait.'''\n"
        "    started.set()\n"
        "    try:\n"
        "        await asyncio.sleep(30)\n"
        "    except asyncio.CancelledError:\n"
        "        stopped.append('cancelled mid-tool')\n"
        "        raise\n"
        "    return 'late'\n"
    )
    model = script([{"match": "wait", "tool": "wait_long", "arguments": {}, "answer": "done"}])
    ip.cell(f"synapse --model {model} --background", "wait please")
    handle = ip.ns["_synapse"]
    ip.run("await asyncio.wait_for(started.wait(), 10)")  # the tool call is running
    assert not handle.done()
    ip.line("unload_ext", "synapse_nb")
    assert handle.done()
    assert handle.status == "cancelled"
    assert ip.ns["stopped"] == ["cancelled mid-tool"]
    assert handle.task.result().tool_calls.error.tolist() == ["cancelled"]


def test_background_approvals_are_answered_with_the_buttons(ip: Any, script: Script) -> None:
    ip.run(TOOLS)
    ip.cell(f"synapse --model {script(SHOUT)} --background", "wipe orders")
    handle = ip.ns["_synapse"]
    controls = handle.controls
    ip.run(WAIT_FOR_APPROVAL_REQUEST)
    assert [r.spec.name for r in controls.pending] == ["wipe"]
    controls.approve_button.click()
    result = handle.result(timeout=10)
    assert result.text == "Result: wiped orders"
    assert result.tool_calls.approval.tolist() == ["approved"]
    assert controls.status == "finished"
    assert not ip.prompts  # nothing was asked on stdin


def test_a_background_approval_is_a_card_right_above_the_tool_line_where_a_form_goes(ip: Any, script: Script) -> None:
    """One place for what a background run asks: its approvals sat below the tool's line, in the run's controls,
    while a server's form is cut in above it (test_nb_asking_call.py). Now the approval is that card too, with
    buttons; answered, it says the decision, and the tool's line goes on below it."""
    ip.run(TOOLS)
    ip.cell(f"synapse --model {script(SHOUT)} --background", "wipe orders")
    handle = ip.ns["_synapse"]
    controls = handle.controls
    ip.run(WAIT_FOR_APPROVAL_REQUEST)
    (card,) = [b for b, _, update in ip.published.items if "snb-approval-card" in b.get("text/html", "")]
    assert "application/vnd.jupyter.widget-view+json" in card  # the buttons
    assert "Answer with the buttons below." in card["text/html"]
    assert '  "table": "orders"' in card["text/plain"]
    assert controls.approval_box not in controls.children  # not a second time, in the controls below
    controls.approve_button.click()
    result = handle.result(timeout=10)
    assert result.tool_calls.approval.tolist() == ["approved"]
    final = [b["text/plain"] for b in ip.published.final]
    at = final.index("✓ wipe: approved")
    assert "wipe" not in "\n".join(final[:at])  # nothing of the call above the card
    assert "wipe" in "\n".join(final[at + 1:])  # the tool's line below it


def test_stop_button_cancels_a_background_run(ip: Any, script: Script) -> None:
    ip.run(TOOLS)
    ip.cell(f"synapse --model {script(SHOUT)} --background", "wipe orders")
    handle = ip.ns["_synapse"]
    ip.run(WAIT_FOR_APPROVAL_REQUEST)
    handle.controls.stop_button.click()
    assert handle.result(timeout=10).status == "cancelled"
    assert turns().status.tolist() == ["cancelled"]


def test_notebook_tools_are_listed_with_the_mcp_tools(ip: Any) -> None:
    ip.run(TOOLS)
    tools = ip.line("mcp", "tools").set_index("name")
    tools = tools[tools.server != "kernel"]  # the built-in kernel__* group is listed too (test_nb_kernel_tools.py)
    assert list(tools.index) == ["shout", "wipe"]
    assert tools.loc["wipe", "destructive"]
    assert tools.loc["shout", "description"] == "Shout the text."


def test_an_unusable_history_file_is_said_once_and_the_turn_still_runs(
    ip: Any, script: Script, clean_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNAPSE_DB", str(clean_env))  # a folder, not a file
    model = script(["answer one", "answer two"])
    ip.cell(f"synapse --model {model}", "q1")
    assert "this turn is not recorded" in ip.published.markdown()
    assert ip.ns["_synapse"].text == "answer one"
    ip.published.clear()
    ip.cell(f"synapse --model {model}", "q2")
    assert "not recorded" not in ip.published.markdown()


def test_current_gives_the_state_for_top_level_await(ip: Any) -> None:
    ip.run("import synapse_nb.notebook\nstate = synapse_nb.notebook.current()")
    assert ip.ns["state"] is ip.state


def test_the_running_line_shows_before_anything_slow(ip: Any, script: Script, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frontend sees the cell running before the provider is resolved (the first one imports httpx and the
    agent layer) and before the history's session-name lookup: the first `%%synapse` of a kernel did both
    before drawing anything (1-2 s). The turn's display then takes that same output over."""
    model = script(["the answer"])
    state = ip.state
    shown_before: dict[str, int] = {}
    for owner, name in ((state.models, "provider"), (state.sessions, "own_name")):
        original = getattr(owner, name)

        def traced(*args: Any, _name: str = name, _original: Any = original) -> Any:
            shown_before.setdefault(_name, len([i for i in ip.published.items if i[0].get("text/plain")]))
            return _original(*args)

        monkeypatch.setattr(owner, name, traced)
    state.sessions.current = "fresh"  # a session this kernel has not used: its name is looked up in the history
    ip.cell(f"synapse --model {model}", "answer me")
    assert shown_before == {"provider": 1, "own_name": 1}  # the running line only, and nothing else
    _, display_id, update = ip.published.items[0]
    assert display_id is not None
    assert not update
    assert all(i[1] in (display_id, None) for i in ip.published.items)  # one live output, then the final one
    assert ip.published.text().startswith("the answer")


def test_a_bad_cell_leaves_no_running_line(ip: Any) -> None:
    with pytest.raises(UsageError):
        ip.cell("synapse --tools nothing_like_this", "hello")
    assert ip.published.final == []


def test_the_running_line_names_no_model_before_it_is_known_and_counts_no_zero_iterations(ip: Any) -> None:
    ip.cell("synapse", "hello there")
    shown = [str(bundle.get("text/plain", "")) for bundle, _id, _update in ip.published.items]
    running = [text for text in shown if "running" in text]
    assert running, shown
    assert not [text for text in shown if "default model" in text or "0 iterations" in text], shown
    assert "1 iteration" in ip.published.final[-1]["text/plain"]
