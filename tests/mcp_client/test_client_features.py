"""Elicitation, sampling, roots, progress, logging, subscriptions and tasks against server-everything (stdio)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from synapse_nb.errors import McpError, ToolCallTimeout
from synapse_nb.mcp_client.elicitation import ElicitationAnswer, ElicitationForm, UrlElicitation
from synapse_nb.mcp_client.handlers import ClientHandlers
from synapse_nb.mcp_client.hub import McpHub
from synapse_nb.mcp_client.logs import LogEntry, level_at_least
from synapse_nb.mcp_client.sampling import SamplingReply, SamplingRequest
from tests.mcp_client.mcp_helpers import Events

pytestmark = pytest.mark.anyio

GATED = {"get-roots-list", "trigger-elicitation-request", "trigger-url-elicitation", "trigger-sampling-request"}
TIMEOUT = 20.0


def _raw_result(text: str) -> dict[str, object]:
    """server-everything echoes the client's answer as JSON after 'Raw result:'."""
    return json.loads(text.split("Raw result:", 1)[1])  # type: ignore[no-any-return]


async def test_elicitation_form_answered_by_the_injected_handler(everything: dict[str, object], events: Events) -> None:
    answers = [
        lambda form: form.answer({"name": "Ada", "check": "yes", "integer": "7",
                                  "untitledMultipleSelectEnum": "Piano, Drums",
                                  "titledSingleSelectEnum": "Wonder Woman"}),
        lambda form: form.answer({"name": "Ada"}),  # everything else from the defaults (SEP-1034)
        lambda form: ElicitationAnswer.decline(),
    ]
    seen: list[ElicitationForm] = []

    async def elicit(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        assert isinstance(request, ElicitationForm)
        seen.append(request)
        return answers[len(seen) - 1](request)

    async with McpHub(handlers=ClientHandlers(elicit=elicit), on_event=events) as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        given = _raw_result((await hub.call("everything__trigger-elicitation-request", {})).text)
        defaults = _raw_result((await hub.call("everything__trigger-elicitation-request", {})).text)
        declined = await hub.call("everything__trigger-elicitation-request", {})

    assert given["action"] == "accept"
    content = given["content"]
    assert isinstance(content, dict)
    assert content["name"] == "Ada"
    assert content["check"] is True
    assert content["integer"] == 7
    assert content["untitledMultipleSelectEnum"] == ["Piano", "Drums"]
    assert content["titledSingleSelectEnum"] == "hero-3"
    assert content["number"] == 3.14  # not given: its default

    assert defaults["content"] == {
        "name": "Ada", "firstLine": "It was a dark and stormy night.", "integer": 42, "number": 3.14,
        "untitledSingleSelectEnum": "Monica", "untitledMultipleSelectEnum": ["Guitar"],
        "titledSingleSelectEnum": "hero-1", "titledMultipleSelectEnum": ["fish-1"], "legacyTitledEnum": "pet-1",
    }
    assert "declined" in declined.text

    form = seen[0]
    kinds = {f.name: f.kind for f in form.fields}
    assert kinds["check"] == "boolean"
    assert kinds["integer"] == "integer"
    assert kinds["titledMultipleSelectEnum"] == "multi_choice"
    assert kinds["legacyTitledEnum"] == "choice"
    legacy = next(f for f in form.fields if f.name == "legacyTitledEnum")
    assert [c.title for c in legacy.choices][:2] == ["Cats", "Dogs"]
    assert next(f for f in form.fields if f.name == "name").required
    assert [e.detail["action"] for e in events.items if e.event == "elicitation"] == [  # type: ignore[index]
        "accept", "accept", "decline"]


async def test_elicitation_without_handler_or_with_decline_policy_is_declined(everything: dict[str, object]) -> None:
    asked: list[object] = []

    async def elicit(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        asked.append(request)
        raise AssertionError("the decline policy must not ask")

    async with McpHub() as plain, McpHub(handlers=ClientHandlers(elicit=elicit)) as policed:
        await plain.connect("everything", **everything)  # type: ignore[arg-type]
        await policed.connect("everything", **everything, elicitation="decline")  # type: ignore[arg-type]
        for hub in (plain, policed):
            assert "declined" in (await hub.call("everything__trigger-elicitation-request", {})).text
    assert asked == []


async def test_url_elicitation_reaches_the_handler(everything: dict[str, object]) -> None:
    seen: list[UrlElicitation] = []

    async def elicit(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        assert isinstance(request, UrlElicitation)
        seen.append(request)
        return request.consent()

    async with McpHub(handlers=ClientHandlers(elicit=elicit)) as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        result = await hub.call("everything__trigger-url-elicitation",
                                {"url": "https://example.com/sign-in", "message": "Sign in please"})
    assert not result.is_error, result.text
    assert [(s.url, s.message, s.server) for s in seen] == [("https://example.com/sign-in", "Sign in please",
                                                             "everything")]
    assert seen[0].elicitation_id


async def test_sampling_answered_by_the_injected_model(everything: dict[str, object], events: Events) -> None:
    requests: list[SamplingRequest] = []

    async def sample(request: SamplingRequest) -> SamplingReply:
        requests.append(request)
        return SamplingReply(text=f"echo of {request.messages[-1].content}", model="scripted:test")

    async def approve(request: SamplingRequest) -> bool:
        return request.server != "refused"

    handlers = ClientHandlers(sample=sample, approve_sampling=approve)
    async with McpHub(handlers=handlers, on_event=events) as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        result = await hub.call("everything__trigger-sampling-request", {"prompt": "hello", "maxTokens": 20})
        await hub.connect("denied", **everything, sampling="deny")  # type: ignore[arg-type]
        denied = await hub.call("denied__trigger-sampling-request", {"prompt": "hello", "maxTokens": 20})
        await hub.connect("refused", **everything)  # type: ignore[arg-type]
        refused = await hub.call("refused__trigger-sampling-request", {"prompt": "hello", "maxTokens": 20})
    assert "echo of" in result.text
    assert "hello" in result.text
    assert "scripted:test" in result.text
    (request,) = requests
    assert request.max_tokens == 20
    assert request.system_prompt
    assert request.temperature is not None
    assert denied.is_error
    assert '"sampling": "deny"' in denied.text
    assert any(e.event == "sampling" and e.server == "denied" for e in events.items)
    assert refused.is_error
    assert "the user declined the sampling request" in refused.text
    assert len(requests) == 1  # neither the denied nor the refused request reached the model


async def test_sampling_without_a_model_is_refused_clearly(everything: dict[str, object]) -> None:
    async with McpHub() as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        result = await hub.call("everything__trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
    assert result.is_error
    assert "no model to answer sampling requests" in result.text


async def test_roots_listed_and_changed(everything: dict[str, object], tmp_path: Path, events: Events) -> None:
    fetched: asyncio.Queue[str] = asyncio.Queue()  # the server logs each roots/list answer it received

    def on_log(server: str, entry: LogEntry) -> None:
        if entry.text.startswith("Roots updated"):
            fetched.put_nowait(entry.text)

    async with McpHub(on_event=events, handlers=ClientHandlers(on_log=on_log)) as hub:
        await hub.connect("everything", roots=["."], **everything)  # type: ignore[arg-type]
        assert hub.roots("everything") == (Path.cwd().resolve(),)
        assert "1 root(s)" in await asyncio.wait_for(fetched.get(), TIMEOUT)
        first = (await hub.call("everything__get-roots-list", {})).text
        assert Path.cwd().resolve().as_uri() in first

        await hub.set_roots("everything", [tmp_path, tmp_path / "sub"])
        assert hub.roots("everything") == (tmp_path, tmp_path / "sub")  # pytest's tmp_path is resolved
        assert "2 root(s)" in await asyncio.wait_for(fetched.get(), TIMEOUT)  # it asked again after list_changed
        after = (await hub.call("everything__get-roots-list", {})).text
    assert tmp_path.as_uri() in after
    assert "(2 total)" in after
    assert "roots_changed" in events.names("everything")


async def test_logging_toggled_and_seen_in_the_ring(everything: dict[str, object], events: Events) -> None:
    arrived = asyncio.Event()
    live: list[LogEntry] = []

    def on_log(server: str, entry: LogEntry) -> None:
        live.append(entry)
        if entry.text.endswith("-level message") or "level-message" in entry.text:
            arrived.set()

    async with McpHub(handlers=ClientHandlers(on_log=on_log), on_event=events) as hub:
        await hub.connect("everything", **everything, log_level="debug")  # type: ignore[arg-type]
        await hub.set_log_level("everything", "debug")
        await hub.call("everything__toggle-simulated-logging", {})
        await asyncio.wait_for(arrived.wait(), TIMEOUT)
        await hub.call("everything__toggle-simulated-logging", {})  # off again
        entries = hub.logs("everything")
        simulated = [e for e in entries if "message" in e.text and "level" in e.text.lower()]
        assert simulated
        severe = hub.logs("everything", level="warning")
        assert all(level_at_least(e.level, "warning") for e in severe)
        assert hub.logs("everything", 1) == entries[-1:]
        warned = [e for e in events.items if e.event == "log"]
        assert len(warned) == len(severe)
        with pytest.raises(McpError, match="unknown log level"):
            hub.logs("everything", level="loud")


async def test_subscription_update_seen(everything: dict[str, object]) -> None:
    updated: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    handlers = ClientHandlers(on_resource_updated=lambda server, uri: updated.put_nowait((server, uri)))
    async with McpHub(handlers=handlers) as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        uri = (await hub.list_resources("everything"))[0].uri
        await hub.subscribe("everything", uri)
        await hub.call("everything__toggle-subscriber-updates", {})
        assert await asyncio.wait_for(updated.get(), TIMEOUT) == ("everything", uri)
        await hub.call("everything__toggle-subscriber-updates", {})
        await hub.unsubscribe("everything", uri)


async def test_task_required_tool_marked_and_offered(everything: dict[str, object], events: Events) -> None:
    async with McpHub(on_event=events) as hub:
        await hub.connect("everything", roots=["."], **everything)  # type: ignore[arg-type]
        await events.wait_for("tools_changed", "everything")
        spec = hub.tool("everything__simulate-research-query")
        assert spec.needs_task
        assert spec.name in {t.name for t in hub.tools}  # the server serves tasks: the model may call it
        names = {t.name.removeprefix("everything__") for t in hub.tools}
    assert names >= GATED
    assert len(names) == 17


async def test_progress_reported_and_resets_the_timeout(everything: dict[str, object]) -> None:
    reports: list[tuple[float, float | None, str | None]] = []
    async with McpHub(max_total_timeout=60.0) as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        # 6 reports 0.5 s apart: without the resets a 1.5 s timeout ends the 3 s call
        result = await hub.call("everything__trigger-long-running-operation", {"duration": 3, "steps": 6},
                                timeout=1.5, on_progress=lambda p, t, m: reports.append((p, t, m)))
    assert "completed" in result.text
    assert [r[0] for r in reports] == [1, 2, 3, 4, 5, 6]
    assert {r[1] for r in reports} == {6}


async def test_progress_cannot_extend_past_the_maximum(everything: dict[str, object]) -> None:
    async with McpHub(max_total_timeout=1.0) as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        with pytest.raises(ToolCallTimeout):
            await hub.call("everything__trigger-long-running-operation", {"duration": 20, "steps": 40}, timeout=0.8)
        assert (await hub.call("everything__echo", {"message": "still here"})).text == "Echo: still here"


def test_roots_are_offered_only_when_configured() -> None:
    from synapse_nb.config import ServerConfig
    from synapse_nb.mcp_client.handlers import ServerHooks

    hooks = ServerHooks(ServerConfig(name="x", command="x", roots=("data", os.sep + "srv", ".")), ClientHandlers(),
                        lambda event, detail: None, cwd=Path("/work"))
    assert hooks.roots == (Path("/work/data").resolve(), Path("/srv").resolve(), Path("/work").resolve())
    assert hooks.client_kwargs(lambda message: None)["list_roots_callback"] is not None  # type: ignore[arg-type,return-value]
    bare = ServerHooks(ServerConfig(name="x", command="x"), ClientHandlers(), lambda event, detail: None)
    assert bare.roots == ()
    assert bare.client_kwargs(lambda message: None)["list_roots_callback"] is None  # type: ignore[arg-type,return-value]


async def test_a_server_given_no_roots_is_not_told_the_client_has_any(everything: dict[str, object]) -> None:
    async with McpHub() as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        assert hub.roots("everything") == ()
        assert "everything__get-roots-list" not in {t.name for t in hub.tools}  # it gates that tool on the capability
        await hub.set_roots("everything", ["."])  # opting in later reconnects it with the capability
        assert hub.roots("everything") == (Path.cwd().resolve(),)
        listed = (await hub.call("everything__get-roots-list", {})).text
    assert Path.cwd().resolve().as_uri() in listed


async def test_result_kinds_and_annotations_kept(everything: dict[str, object]) -> None:
    async with McpHub() as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        annotated = await hub.call("everything__get-annotated-message", {"messageType": "error", "includeImage": True})
        embedded = await hub.call("everything__get-resource-reference", {"resourceType": "Text", "resourceId": 1})
        weather = await hub.call("everything__get-structured-content", {"location": "Chicago"})
    text, image = annotated.content[0], annotated.content[1]
    assert text.annotations == {"priority": 1.0, "audience": ["user", "assistant"]}
    assert image.kind == "image"
    assert image.annotations is not None
    assert "resource" in [b.kind for b in embedded.content]
    assert weather.structured_content is not None
    assert set(weather.structured_content) == {"temperature", "conditions", "humidity"}  # validated by the SDK
    again = type(annotated).from_dict(annotated.to_dict())
    assert again == annotated


async def test_url_elicitation_required_error_is_shown_then_the_call_retried(everything: dict[str, object],
                                                                             events: Events) -> None:
    seen: list[UrlElicitation] = []
    declining: list[bool] = []

    async def elicit(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        assert isinstance(request, UrlElicitation)
        seen.append(request)
        return ElicitationAnswer.decline() if declining else request.consent()

    pay = {"url": "https://example.com/pay", "errorPath": True}
    async with McpHub(handlers=ClientHandlers(elicit=elicit), on_event=events) as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        # -32042 names a prerequisite URL; once the user completed it the call is retried and goes through
        result = await hub.call("everything__trigger-url-elicitation", {**pay, "elicitationId": "yes"})
        assert not result.is_error, result.text
        assert len(seen) == 2
        assert seen[0].url != pay["url"]
        assert seen[1].url == pay["url"]
        required = [e.detail for e in events.items if e.event == "elicitation"]
        assert [d.get("required") for d in required] == [True, None]  # type: ignore[union-attr]

        seen.clear()
        declining.append(True)
        with pytest.raises(McpError, match="-32042"):  # declined: the server's error stands
            await hub.call("everything__trigger-url-elicitation", {**pay, "elicitationId": "no"})
        assert len(seen) == 1


async def test_a_question_to_the_user_holds_the_call_timeout(everything: dict[str, object]) -> None:
    async def slow_user(request: ElicitationForm | UrlElicitation) -> ElicitationAnswer:
        assert isinstance(request, ElicitationForm)
        await asyncio.sleep(1.5)  # the user reads and types for three times the call's timeout
        return request.answer({"name": "Ada"})

    async with McpHub(handlers=ClientHandlers(elicit=slow_user), max_total_timeout=60.0) as hub:
        await hub.connect("everything", **everything)  # type: ignore[arg-type]
        result = await hub.call("everything__trigger-elicitation-request", {}, timeout=0.5)
    assert _raw_result(result.text)["action"] == "accept"


async def test_warnings_and_above_become_server_events() -> None:
    import mcp.types as mt

    from synapse_nb.config import ServerConfig
    from synapse_nb.mcp_client.handlers import ServerHooks

    emitted: list[tuple[str, dict[str, object]]] = []
    hooks = ServerHooks(ServerConfig(name="s", command="x"), ClientHandlers(),
                        lambda event, detail: emitted.append((event, dict(detail))))
    kwargs = hooks.client_kwargs(lambda message: asyncio.sleep(0))
    for level in ("info", "warning", "emergency"):
        await kwargs["logging_callback"](mt.LoggingMessageNotificationParams(level=level, data=f"{level} x",
                                                                             logger="srv"))
    assert [e.level for e in hooks.log_ring.tail()] == ["info", "warning", "emergency"]
    assert [(event, detail["level"]) for event, detail in emitted] == [("log", "warning"), ("log", "emergency")]
