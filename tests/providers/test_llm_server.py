"""The test server itself: a responder for dynamic replies, a 400 when nothing is queued, standalone mode."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from synapse_nb.errors import ProviderError
from synapse_nb.protocols import Completion
from synapse_nb.providers.openai import OpenAIProvider
from synapse_nb.types import Message
from tests.support.llm_server import LlmServer, RecordedRequest, Reply, call, text, tool_calls

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).resolve().parents[1] / "support" / "llm_server.py"


async def test_a_responder_answers_from_the_request(llm_server: LlmServer) -> None:
    def respond(request: RecordedRequest) -> Reply:
        return text("you said: " + request.body["messages"][-1]["content"])

    llm_server.responder = respond
    async with OpenAIProvider("m", api_key="k", base_url=llm_server.openai_base_url) as provider:
        chunks = [c async for c in provider.stream([Message.user("ping")])]
    assert isinstance(chunks[-1], Completion)
    assert chunks[-1].message.content == "you said: ping"


async def test_an_empty_queue_answers_400_saying_so(llm_server: LlmServer) -> None:
    async with OpenAIProvider("m", api_key="k", base_url=llm_server.openai_base_url) as provider:
        with pytest.raises(ProviderError, match="no reply queued") as info:
            [c async for c in provider.stream([Message.user("hi")])]
    assert info.value.status == 400


def streamed_text(sse: str) -> str:
    chunks = [json.loads(line[6:]) for line in sse.splitlines() if line.startswith("data: {")]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


@pytest.mark.process
def test_standalone_process_serves_a_script_and_logs_requests(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}, {"text": "bye"}]))
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", "0", "--script", str(script), "--log", str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("LLM_SERVER_URL=http://127.0.0.1:")
        url = line.split("=", 1)[1] + "/v1/chat/completions"
        first = httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}, timeout=10)
        second = httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": "again"}]}, timeout=10)
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        if proc.stdout is not None:
            proc.stdout.close()
    assert '"name": "echo"' in first.text
    assert streamed_text(second.text) == "bye"
    logged = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["body"]["messages"][-1]["content"] for r in logged] == ["hi", "again"]


def test_it_speaks_plain_http_too(llm_server: LlmServer) -> None:
    llm_server.queue(tool_calls(call("t", {"a": 1}), pieces=1))
    response = httpx.post(f"{llm_server.anthropic_base_url}/v1/messages", json={"model": "x", "messages": []})
    assert response.headers["content-type"].startswith("text/event-stream")
    assert '"partial_json": "{\\"a\\": 1}"' in response.text
    assert httpx.get(f"{llm_server.base_url}/nope").status_code == 404


def test_latency_holds_each_model_answer_back() -> None:
    # A lower bound only (the server sleeps at least this long): it cannot flake on a slow machine.
    with LlmServer(latency=0.3) as server:
        server.queue(text("late"), text("late again"))
        for _ in range(2):
            started = time.monotonic()
            response = httpx.post(f"{server.openai_base_url}/chat/completions", json={"model": "x", "messages": []})
            assert time.monotonic() - started >= 0.3
            assert streamed_text(response.text) in ("late", "late again")
        assert httpx.get(f"{server.base_url}/nope").status_code == 404
