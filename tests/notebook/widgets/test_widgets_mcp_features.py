"""Inspector widgets against the npm reference server (server-everything, stdio): logs, subscriptions, elicitation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as w
import pytest

from synapse_nb.events import Event, ServerEvent
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationForm, UrlElicitation
from synapse_nb.mcp_client.handlers import ClientHandlers
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.logs import level_at_least
from synapse_nb.notebook.kernel.runner import Runner
from synapse_nb.notebook.subcommands import widget_parts
from synapse_nb.notebook.widgets import Inspector
from synapse_nb.notebook.widgets.elicit_form import ElicitationWidget
from tests.notebook.widgets.real_state import connected, go_live, private_runner, private_state
from tests.support.npm_servers import EVERYTHING, node_for

TIMEOUT = 60


@dataclass
class State:
    """The facade as the notebook layer builds it, without IPython: a hub, a runner, its server events."""

    runner: Runner
    hub: McpHub = field(init=False)
    listeners: list[Callable[[Event], None]] = field(default_factory=list)
    answers: Any = None  # the rest of widgets/facade.py's StateLike: none of them here
    sign_in: Any = None
    apps: Any = None
    kernel: Any = None
    registry: Any = None
    search_tools: Any = None

    def kernel_tools(self) -> bool:
        return False

    def __post_init__(self) -> None:
        self.hub = McpHub(on_event=self.emit)

    def emit(self, event: Event) -> None:
        for listener in list(self.listeners):
            listener(event)

    def on_server_event(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def history(self) -> Any:
        return None

    async def call_tool(self, qualified: str, arguments: Any, *, on_progress: Any = None, on_recorded: Any = None,
                        ) -> Any:
        return await self.hub.call(qualified, arguments, on_progress=on_progress)


def node_args() -> dict[str, Any]:
    node = node_for(EVERYTHING)
    return {"command": node, "args": [str(EVERYTHING), "stdio"]}


@pytest.fixture
def everything() -> Iterator[State]:
    with private_runner() as runner:
        state = State(runner)
        # warnings and above only: every simulated message then is one the hub reports as a `log` event
        with connected(runner, state.hub, "everything", **node_args(), log_level="warning"):
            yield state


def wait_for_event(state: Any, name: str, *, foreground: bool = True) -> ServerEvent:
    """Drive the runner's loop until the hub reports server event `name` (listeners added before run first).

    `foreground=False` drives the loop as the kernel does between cells (no cell waits: `runner.foreground`
    is false), as when a call was made from the inspector."""
    seen: asyncio.Future[ServerEvent] = state.runner.loop.create_future()

    def listener(event: Event) -> None:
        if isinstance(event, ServerEvent) and event.event == name and not seen.done():
            seen.set_result(event)

    # the widgets' facade (State) or the kernel's (SynapseState, whose router has it)
    subscribe = state.on_server_event if isinstance(state, State) else state.router.on_server_event
    unsubscribe = subscribe(listener)
    try:
        if not foreground:
            return state.runner.loop.run_until_complete(asyncio.wait_for(seen, TIMEOUT))
        return state.runner.run(asyncio.wait_for(seen, TIMEOUT))
    finally:
        unsubscribe()


def test_log_ring_follows_log_events_and_filters_by_level(everything: State) -> None:
    ins = Inspector(everything, "everything")
    panel = ins.panels["everything"]
    assert panel.logs.titles == ("logs (0 messages at debug or above)",)
    assert "No log messages from everything" in panel.log_view.view.value
    everything.runner.run(everything.hub.call("everything__toggle-simulated-logging", {}), timeout=TIMEOUT)
    try:
        event = wait_for_event(everything, "log")  # the inspector's own listener re-read the hub first
    finally:
        everything.runner.run(everything.hub.call("everything__toggle-simulated-logging", {}), timeout=TIMEOUT)
    entries = everything.hub.logs("everything", level="debug")
    assert entries
    assert all(level_at_least(e.level, "warning") for e in entries)
    assert panel.log_view.count >= 1
    assert isinstance(event.detail, dict)
    assert str(event.detail["message"]) in panel.log_view.view.value
    assert panel.logs.titles[0].startswith(f"logs ({panel.log_view.count} message")
    # the filter re-reads the ring at the chosen level
    panel.log_view.level.value = "emergency"
    severe = everything.hub.logs("everything", level="emergency")
    assert panel.log_view.count == len(severe)
    assert panel.logs.titles == (f"logs ({len(severe)} message{'s' if len(severe) != 1 else ''} "
                                 "at emergency or above)",)
    if not severe:
        assert "at emergency or above" in panel.log_view.view.value
    mild = [e for e in entries if e.level != "emergency"]
    for entry in mild:
        assert entry.text not in panel.log_view.view.value
    panel.log_view.level.value = "debug"
    assert panel.log_view.count == len(everything.hub.logs("everything", level="debug"))
    ins.close()


def settle(runner: Runner, tasks: list[Any]) -> None:
    """Run the panel's spawned tasks to their end on the runner's loop (which runs only while the test drives it)."""
    runner.run(asyncio.wait_for(asyncio.gather(*tasks), TIMEOUT))


@pytest.mark.node
def test_subscribe_button_shows_resource_updates(clean_env: Any) -> None:
    """With the notebook's own facade: the updates `%mcp subscribe` lists are the ones the inspector shows."""
    with private_state() as state:
        state.runner.run(state.hub.connect("everything", **node_args()), timeout=TIMEOUT)
        ins = Inspector(widget_parts(state), "everything")
        panel = ins.panels["everything"]
        settle(state.runner, panel.tasks)  # the catalogue
        browser = panel.resource_browser
        uri = str(browser.choice.value)
        assert uri
        assert browser.subscribe_button.description == "Subscribe"
        assert browser.updates.value == ""
        browser.subscribe_button.click()
        settle(state.runner, panel.tasks)
        assert browser.subscribed == {uri}
        assert "subscribed to" in browser.output.value
        assert browser.subscribe_button.description == "Unsubscribe"
        state.runner.run(state.hub.call("everything__toggle-subscriber-updates", {}), timeout=TIMEOUT)
        try:
            event = wait_for_event(state, "resource_updated")
        finally:
            state.runner.run(state.hub.call("everything__toggle-subscriber-updates", {}), timeout=TIMEOUT)
        assert event.detail == {"uri": uri}
        assert state.answers is not None
        assert ("everything", uri) in state.answers.updates
        assert f"⟳ <code>{uri}</code> updated" in browser.updates.value
        browser.subscribe_button.click()
        settle(state.runner, panel.tasks)
        assert browser.subscribed == set()
        assert browser.subscribe_button.description == "Subscribe"
        assert "unsubscribed from" in browser.output.value
        ins.close()


@pytest.mark.node
def test_a_resource_template_is_listed_with_a_box_per_variable_and_read_filled(clean_env: Any) -> None:
    template = "demo://resource/dynamic/text/{resourceId}"
    with private_state() as state:
        state.runner.run(state.hub.connect("everything", **node_args()), timeout=TIMEOUT)
        ins = Inspector(widget_parts(state), "everything")
        panel = ins.panels["everything"]
        settle(state.runner, panel.tasks)  # the catalogue
        browser = panel.resource_browser
        assert ("Dynamic Text Resource (template)", template) in browser.choice.options
        assert f"<code>{template}</code>" in browser.listing.value
        browser.choice.value = template
        assert list(browser.variables) == ["resourceId"]
        assert browser.subscribe_button.disabled

        browser.button.click()  # nothing filled: nothing sent, the variable named
        assert "needs resourceId" in browser.output.value
        browser.variables["resourceId"].value = "3"
        browser.button.click()
        settle(state.runner, panel.tasks)
        assert "Resource 3" in browser.output.value
        ins.close()


class Shown:
    """An elicitation handler that answers through an ElicitationWidget, as a background run does."""

    def __init__(self) -> None:
        self.widgets: list[ElicitationWidget] = []
        self.event = asyncio.Event()

    async def __call__(self, request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        widget = ElicitationWidget(request, asyncio.get_running_loop())
        self.widgets.append(widget)
        self.event.set()
        return await widget.wait()

    def next(self, runner: Runner) -> ElicitationWidget:
        runner.run(asyncio.wait_for(self.event.wait(), TIMEOUT))
        self.event.clear()
        return self.widgets[-1]


@pytest.fixture
def asking() -> Iterator[tuple[Runner, McpHub, Shown]]:
    shown = Shown()
    with private_runner() as runner, connected(runner, McpHub(handlers=ClientHandlers(elicit=shown)), "everything",
                                               **node_args()) as hub:
        yield runner, hub, shown


@pytest.mark.node
def test_elicitation_form_widget_answers_with_defaults(asking: tuple[Runner, McpHub, Shown]) -> None:
    runner, hub, shown = asking
    call = runner.spawn(hub.call("everything__trigger-elicitation-request", {}))
    widget = shown.next(runner)
    assert widget.form is not None
    assert widget.accept_button.description == "Submit"
    widget.accept_button.click()  # "name" is required and has no default: refused in the widget, not sent
    assert not widget.done.done()
    assert "snb-err" in widget.status.value
    widget.form.load({"name": "Ada"})
    widget.accept_button.click()
    result = runner.run(asyncio.wait_for(call, TIMEOUT))
    assert "- Name: Ada" in result.text
    assert "- Favorite Integer: 42" in result.text  # the schema's default, applied by ElicitationForm.answer
    assert "accepted: name=Ada" in widget.status.value
    assert widget.accept_button.disabled


@pytest.mark.node
def test_the_form_widget_offers_choices_by_title_multi_selects_and_checks_formats(
    asking: tuple[Runner, McpHub, Shown],
) -> None:
    """Issue 22, section 3: titled oneOf choices and multi-selects were JSON text areas, enumNames were ignored
    and email / uri / date were not checked. server-everything's form has each of them."""
    import ipywidgets as w

    runner, hub, shown = asking
    call = runner.spawn(hub.call("everything__trigger-elicitation-request", {}))
    widget = shown.next(runner)
    form = widget.form
    assert form is not None
    hero = form.inputs[("titledSingleSelectEnum",)]
    assert isinstance(hero, w.Dropdown)
    assert list(hero.options) == ["Superman (hero-1)", "Green Lantern (hero-2)", "Wonder Woman (hero-3)"]
    pet = form.inputs[("legacyTitledEnum",)]
    assert isinstance(pet, w.Dropdown)
    assert list(pet.options)[:2] == ["Cats (pet-1)", "Dogs (pet-2)"]  # enumNames
    fish = form.inputs[("titledMultipleSelectEnum",)]
    assert isinstance(fish, w.SelectMultiple)
    assert list(fish.options) == ["Tuna (fish-1)", "Salmon (fish-2)", "Trout (fish-3)"]
    assert fish.index == (0,)  # the default, ["fish-1"]
    instruments = form.inputs[("untitledMultipleSelectEnum",)]
    assert isinstance(instruments, w.SelectMultiple)
    assert list(instruments.options) == ["Guitar", "Piano", "Violin", "Drums", "Bass"]

    form.load({"name": "Ada", "email": "ada at example", "homepage": "example.org", "birthdate": "10/12/1815"})
    widget.accept_button.click()
    assert not widget.done.done()  # refused in the widget, each bad field marked next to it
    assert "is not an email address" in form.error_labels[("email",)].value
    assert "is not a URI" in form.error_labels[("homepage",)].value
    assert "is not a date" in form.error_labels[("birthdate",)].value
    form.load({"name": "Ada", "email": "ada@example.org", "homepage": "https://example.org/ada",
               "birthdate": "1815-12-10"})
    hero.index = 2
    fish.index = (1, 2)
    instruments.index = (1, 3)
    widget.accept_button.click()
    result = runner.run(asyncio.wait_for(call, TIMEOUT))
    raw = result.text
    assert "hero-3" in raw
    assert "fish-2" in raw
    assert "fish-3" in raw
    assert "Piano" in raw
    assert "Drums" in raw
    assert "ada@example.org" in raw
    assert "1815-12-10" in raw


@pytest.mark.node
def test_url_elicitation_widget_shows_the_link_and_declines(asking: tuple[Runner, McpHub, Shown]) -> None:
    runner, hub, shown = asking
    url = "https://example.com/sign-in"
    call = runner.spawn(hub.call("everything__trigger-url-elicitation", {"url": url, "message": "Sign in please"}))
    widget = shown.next(runner)
    assert widget.form is None
    assert widget.accept_button.description == "Done"
    html = "".join(c.value for c in widget.children if isinstance(c, w.HTML))
    assert f'href="{url}"' in html
    assert "Sign in please" in html
    widget.decline_button.click()
    result = runner.run(asyncio.wait_for(call, TIMEOUT))
    assert "declined to open the URL" in result.text
    assert "declined" in widget.status.value


@pytest.mark.node
def test_a_form_asked_during_an_inspector_call_shows_in_the_panel(clean_env: Any) -> None:
    """The notebook's own answers: a call made from the inspector (no cell waits) gets the widget form,
    in the cell and in the server's panel, and the panel drops it once answered."""
    with private_state() as state:
        published = go_live(state)
        state.runner.run(state.hub.connect("everything", **node_args()), timeout=TIMEOUT)
        ins = Inspector(widget_parts(state), "everything")
        panel = ins.panels["everything"]
        assert panel.asking.children == ()
        call = state.runner.spawn(state.manual.call("everything__trigger-elicitation-request", {}))
        wait_for_event(state, "elicitation_asked", foreground=False)
        (widget,) = panel.asking.children
        assert isinstance(widget, ElicitationWidget)
        assert any("application/vnd.jupyter.widget-view+json" in b for b in published)
        assert widget.form is not None
        widget.form.load({"name": "Grace"})
        widget.accept_button.click()
        result = state.runner.loop.run_until_complete(asyncio.wait_for(call, TIMEOUT))
        assert "- Name: Grace" in result.text
        assert panel.asking.children == ()
        ins.close()


def test_a_cancelled_call_closes_its_question() -> None:
    """The waiting call gives up (an interrupt, a cancelled background run): the widget stops taking answers."""
    from synapse_nb.mcp_client.elicitation import parse_form

    loop = asyncio.new_event_loop()
    try:
        widget = ElicitationWidget(parse_form("srv", "Name?", {"type": "object", "properties": {
            "name": {"type": "string"}}, "required": ["name"]}), loop)

        async def give_up() -> None:
            waiting = asyncio.ensure_future(widget.wait())
            await asyncio.sleep(0)  # a turn for the task to start waiting (ordering, not timing)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting

        loop.run_until_complete(give_up())
        assert widget.done.result().action == "cancel"
        assert "cancelled (the call ended before an answer)" in widget.status.value
        assert widget.accept_button.disabled
        widget.decline_button.click()  # too late: nothing changes
        assert widget.done.result().action == "cancel"
    finally:
        loop.close()


@pytest.mark.node
def test_sampling_asked_with_no_cell_waiting_is_approved_through_a_widget(clean_env: Any) -> None:
    """A call from the inspector (or a background run): the sampling approval is a widget, not stdin; Allow lets
    the kernel's model answer the server, Refuse sends it an error."""
    from synapse_nb.mcp_client.sampling import SamplingRequest
    arguments = {"prompt": "write a haiku", "maxTokens": 50}
    with private_state() as state:
        published = go_live(state)
        loop = state.runner.loop
        state.runner.run(state.hub.connect("everything", **node_args()), timeout=TIMEOUT)
        call = state.runner.spawn(state.manual.call("everything__trigger-sampling-request", arguments))
        wait_for_event(state, "elicitation_asked", foreground=False)
        assert state.answers is not None
        (widget,) = state.answers.asking
        assert isinstance(widget.request, SamplingRequest)
        assert (widget.accept_button.description, widget.decline_button.description) == ("Allow", "Refuse")
        assert widget.cancel_button.layout.display == "none"
        shown = "".join(c.value for c in widget.children if isinstance(c, w.HTML))
        assert "write a haiku" in shown
        assert "model scripted:demo, at most 50 tokens" in shown
        widget.accept_button.click()
        allowed = loop.run_until_complete(asyncio.wait_for(call, TIMEOUT))
        assert '"model": "scripted:demo"' in allowed.text  # the server got the kernel model's answer
        assert "allowed" in widget.status.value
        assert any("answered by scripted:demo" in b.get("text/plain", "") for b in published)

        call = state.runner.spawn(state.manual.call("everything__trigger-sampling-request", arguments))
        wait_for_event(state, "elicitation_asked", foreground=False)
        (widget,) = state.answers.asking
        widget.decline_button.click()
        refused = loop.run_until_complete(asyncio.wait_for(call, TIMEOUT))
        assert "the user declined the sampling request" in refused.text
        assert "refused" in widget.status.value
        assert state.answers.asking == []
