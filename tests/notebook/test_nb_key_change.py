"""An API key fixed with `%env` after a 401 is used from the next cell on, without a kernel restart."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from synapse_nb.notebook.commands.ask import TurnError
from tests.support.llm_server import Gate, LlmServer, RecordedRequest, Reply, error, text

OLD_KEY = "old-rotated-0a1b2c3d4e5f6a7b"  # no key pattern matches: masked only as a known value
NEW_KEY = "new-fresh-9f8e7d6c5b4a3f2e"


def only_new_key(request: RecordedRequest) -> Reply:
    if request.headers.get("authorization") == f"Bearer {NEW_KEY}":
        return text("hello with the new key")
    return error(401, "Incorrect API key provided")


def test_env_after_a_401_takes_effect_at_the_next_cell(
    ip: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with LlmServer() as server:
        server.responder = only_new_key
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", OLD_KEY)  # also restores the variable after the test
        with pytest.raises(TurnError, match=r"AuthenticationError: .*check OPENAI_API_KEY"):
            ip.cell("synapse --model openai:gpt-test", "hello")
        old = ip.state.provider("openai:gpt-test")

        ip.run(f"%env OPENAI_API_KEY={NEW_KEY}")
        ip.cell("synapse --model openai:gpt-test", "hello again")
        assert ip.ns["_synapse"].text == "hello with the new key"
        assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {OLD_KEY}", f"Bearer {NEW_KEY}"]

        pending = ip.state.runner.tasks
        if pending:
            ip.state.runner.run(asyncio.wait(pending, timeout=10))
        assert old._http._client.is_closed, "the replaced provider was closed"
        assert ip.state.provider("openai:gpt-test") is not old

    assert ip.state.store.redactor.redact_text(f"x {NEW_KEY} y") == "x [REDACTED] y"
    for shown in (ip.published.text(), repr(ip.state.models.cache), caplog.text):
        assert NEW_KEY not in shown
        assert OLD_KEY not in shown


def test_a_replaced_provider_is_not_closed_under_a_running_background_turn(
    ip: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()

    def replies(request: RecordedRequest) -> Reply:
        if "take your time" in str(request.body):  # the background turn: held half way until the gate opens
            return text(["still ", "streaming"]).gated(gate)
        return only_new_key(request)

    with LlmServer() as server:
        server.responder = replies
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", OLD_KEY)
        ip.cell("synapse --model openai:gpt-test --background --session bg --out job", "take your time")
        old = ip.state.provider("openai:gpt-test")
        ip.run(f"%env OPENAI_API_KEY={NEW_KEY}")
        ip.cell("synapse --model openai:gpt-test --session fg", "meanwhile")
        assert ip.ns["_synapse"].text == "hello with the new key"
        # The loop runs while we wait, so the background turn can get as far as the gate.
        assert ip.state.runner.run(asyncio.to_thread(gate.wait_reached, 10))
        assert not ip.ns["job"].done()
        assert not old._http._client.is_closed, "closing it would break the background run's stream"

        gate.open()
        assert ip.ns["job"].result(timeout=10).text == "still streaming"
        background = [r for r in server.requests if "take your time" in str(r.body)]
        assert [r.headers["authorization"] for r in background] == [f"Bearer {OLD_KEY}"]
        ip.state.provider("openai:gpt-test")  # no run left: now the replaced provider is closed
        pending = ip.state.runner.tasks
        if pending:
            ip.state.runner.run(asyncio.wait(pending, timeout=10))
        assert old._http._client.is_closed
