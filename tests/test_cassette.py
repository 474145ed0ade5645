"""The cassette format and fingerprint (synapse_nb/cassette.py): normalisation, masking, writing, reading, matching."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synapse_nb.cassette import (
    FORMAT,
    CassetteWriter,
    ToolsDigest,
    build_request,
    chunk_record,
    replay_chunks,
    response_record,
)
from synapse_nb.cassette_reader import Cassette
from synapse_nb.errors import CassetteError, ReplayMismatchError
from synapse_nb.masking import MASK, SecretMask
from synapse_nb.protocols import Completion, TextChunk, ToolCallChunk
from synapse_nb.types import ContentBlock, Message, ToolCall, ToolResult, ToolSpec, Usage

KEY = "sk-test-cassette-0123456789abcdef"
HEADER = "hdr-value-5f1e2d3c4b"
SPECS = (ToolSpec("demo__query", "Run SQL", {"type": "object", "properties": {"sql": {"type": "string"}}}),)


def mask() -> SecretMask:
    return SecretMask([HEADER], environ={})


def transcript(call_id: str, answer: str = "3 rows", image: str = "AAAA") -> list[Message]:
    return [
        Message.user("How many rows?"),
        Message.assistant("", (ToolCall(call_id, "demo__query", {"sql": "select 1"}),)),
        Message.tool(call_id, answer, name="demo__query",
                     images=(ContentBlock("image", data=image, mime_type="image/png"),)),
    ]


def request(messages: list[Message], **kw: object) -> str:
    options: dict[str, object] = {"system": "be brief", "params": {}, "mask": mask(), **kw}
    return build_request("openai", "gpt-test", messages, SPECS, **options).fingerprint  # type: ignore[arg-type]


def test_fingerprint_ignores_tool_call_ids_but_not_content() -> None:
    assert request(transcript("call_abc")) == request(transcript("toolu_XYZ"))
    assert request(transcript("call_abc")) != request(transcript("call_abc", answer="4 rows"))
    assert request(transcript("call_abc")) != request(transcript("call_abc", image="BBBB"))
    assert request(transcript("c")) != request(transcript("c"), system="be verbose")
    assert request(transcript("c")) != request(transcript("c"), params={"max_tokens": 10})
    other = (ToolSpec("demo__query", "Run SQL!", dict(SPECS[0].input_schema)),)
    assert build_request("openai", "gpt-test", transcript("c"), other, system="be brief", params={},
                         mask=mask()).fingerprint != request(transcript("c"))


def test_the_request_keeps_no_ids_image_data_or_secrets() -> None:
    messages = [*transcript("call_abc", answer=f"key {KEY} header {HEADER}"), Message.user(f"use {KEY}")]
    built = build_request("openai", "gpt-test", messages, SPECS, system=None, params={}, mask=mask())
    text = json.dumps(built.body)
    assert "call_abc" not in text
    assert "call_1" in text
    assert "AAAA" not in text
    assert KEY not in text
    assert HEADER not in text
    assert MASK in text
    assert list(built.body) == ["provider", "model", "system", "params", "tools", "tool_names", "messages"]


def test_tools_digest_is_recomputed_only_when_the_offer_changes() -> None:
    digest = ToolsDigest()
    first = digest(list(SPECS))
    assert digest(list(SPECS)) == first
    assert digest([]) != first


def test_a_response_streams_again_as_it_was_recorded() -> None:
    chunks = [TextChunk("Hel"), TextChunk("lo"), ToolCallChunk(0, id="c1", name="demo__query"),
              ToolCallChunk(0, arguments_delta='{"sql": "select 1"}')]
    done = Completion(Message.assistant("Hello", (ToolCall("c1", "demo__query", {"sql": "select 1"}),)),
                      Usage(11, 7), "tool_calls")
    record = response_record([chunk_record(c) for c in chunks], done)
    again = replay_chunks(json.loads(json.dumps(record)))
    assert again[:-1] == chunks
    assert again[-1] == Completion(done.message, done.usage, done.stop_reason)


def write_cassette(path: Path) -> str:
    writer = CassetteWriter(path, mask())
    built = build_request("openai", "gpt-test", transcript("c9"), SPECS, system="be brief", params={}, mask=mask())
    writer.exchange(built, response_record([{"text": "3"}], Completion(Message.assistant("3"), Usage(1, 1), "stop")))
    writer.tool("demo__query", {"sql": "select 1", "token": HEADER}, ToolResult.error(f"bad {KEY}"), None, 5.46)
    writer.close()
    return built.fingerprint


def test_a_cassette_is_written_masked_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    fingerprint = write_cassette(path)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"format": FORMAT, "version": 1}
    assert [json.loads(line).get("type") for line in lines[1:]] == ["exchange", "tool"]
    assert KEY not in path.read_text()
    assert HEADER not in path.read_text()
    cassette = Cassette.load(path, mask())
    again = build_request("openai", "gpt-test", transcript("other-id"), SPECS, system="be brief", params={},
                          mask=mask())
    assert again.fingerprint == fingerprint
    assert cassette.answer(again).response["text"] == "3"
    assert cassette.answer(again).line == 2  # the last recording keeps answering
    found = cassette.tool("demo__query", {"sql": "select 1", "token": HEADER})
    assert found is not None
    assert found.result is not None
    assert found.result.is_error
    # as measured: a replay shows what the recording showed (5.46 ms is "5 ms"; rounded to 5.5 it was "6 ms")
    assert found.duration_ms == 5.46
    assert cassette.tool("demo__query", {"sql": "select 2"}) is None


def test_a_request_not_in_the_cassette_names_the_first_message_that_differs(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_cassette(path)
    cassette = Cassette.load(path, mask())
    changed = transcript("c9", answer="4 rows")
    with pytest.raises(ReplayMismatchError) as caught:
        cassette.answer(build_request("openai", "gpt-test", changed, SPECS, system="be brief", params={}, mask=mask()))
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.message_index == 2
    assert 'message #3 (tool) differs from the nearest recorded request (line 2): now tool "4 rows"' in message
    with pytest.raises(ReplayMismatchError, match=r"message #4 \(user \"more\"\) is new"):
        cassette.answer(build_request("openai", "gpt-test", [*transcript("c9"), Message.user("more")], SPECS,
                                      system="be brief", params={}, mask=mask()))
    with pytest.raises(ReplayMismatchError, match=r"the tools offered differ \(-demo__query\)"):
        cassette.answer(build_request("openai", "gpt-test", transcript("c9"), (), system="be brief", params={},
                                      mask=mask()))
    with pytest.raises(ReplayMismatchError, match=r"no exchange for anthropic:claude-x \(it holds openai:gpt-test"):
        cassette.answer(build_request("anthropic", "claude-x", transcript("c9"), SPECS, system="be brief",
                                      params={}, mask=mask()))


def test_bad_cassettes_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="cannot read the cassette"):
        Cassette.load(tmp_path / "missing.jsonl", mask())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hello": 1}\n')
    with pytest.raises(CassetteError, match="not a synapse_nb cassette"):
        Cassette.load(bad, mask())
    bad.write_text(json.dumps({"format": FORMAT, "version": 1}) + "\n{broken\n")
    with pytest.raises(CassetteError, match="line 2: not a cassette record") as caught:
        Cassette.load(bad, mask())
    assert caught.value.line == 2
    bad.write_text(json.dumps({"format": FORMAT, "version": 99}) + "\n")
    with pytest.raises(CassetteError, match="version 99 cassette"):
        Cassette.load(bad, mask())
    with pytest.raises(CassetteError, match="cannot write the cassette"):
        CassetteWriter(bad / "inside-a-file.jsonl", mask())
