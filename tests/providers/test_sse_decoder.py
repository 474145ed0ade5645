"""The SSE decoder and the retry-after parser, as pure functions."""

from __future__ import annotations

import email.utils
import time

import pytest

from synapse_nb.providers._http import RetryPolicy, SseDecoder, SseEvent, parse_retry_after


def decode(*feeds: str) -> list[SseEvent]:
    decoder = SseDecoder()
    events = [e for f in feeds for e in decoder.feed(f)]
    return events + decoder.end()


def test_event_and_data_fields() -> None:
    assert decode("event: ping\ndata: {}\n\ndata: x\n\n") == [SseEvent("{}", "ping"), SseEvent("x", "message")]


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_every_line_ending(eol: str) -> None:
    stream = f"event: a{eol}data: 1{eol}{eol}data: 2{eol}{eol}"
    assert decode(stream) == [SseEvent("1", "a"), SseEvent("2")]


def test_crlf_split_across_feeds_is_one_line_end() -> None:
    # A CR at the end of one feed and its LF at the start of the next must not count as an empty line.
    assert decode("data: a\r", "\ndata: b\r\n\r\n") == [SseEvent("a\nb")]


def test_a_line_split_across_many_feeds() -> None:
    stream = 'event: message_start\ndata: {"type": "message_start"}\n\n'
    assert decode(*stream) == [SseEvent('{"type": "message_start"}', "message_start")]


def test_multi_line_data_joins_with_newlines() -> None:
    assert decode("data: first\ndata: second\ndata:\n\n") == [SseEvent("first\nsecond\n")]


def test_comments_and_unknown_fields_are_ignored() -> None:
    assert decode(": keep-alive\nfoo: bar\ndata: x\n: another\n\n") == [SseEvent("x")]


def test_only_one_leading_space_is_stripped_and_no_colon_means_empty_value() -> None:
    assert decode("data:x\n\ndata:  y\n\ndata\n\n") == [SseEvent("x"), SseEvent(" y"), SseEvent("")]


def test_an_event_without_data_is_not_dispatched() -> None:
    assert decode("event: ping\n\ndata: y\n\n") == [SseEvent("y")]


def test_id_and_retry_fields() -> None:
    assert decode("id: 7\nretry: 1500\ndata: x\n\nretry: soon\ndata: y\n\n") == [
        SseEvent("x", id="7", retry=1500),
        SseEvent("y", id="7", retry=1500),
    ]


def test_a_leading_bom_is_dropped() -> None:
    assert decode("\ufeffdata: x\n\n") == [SseEvent("x")]


def test_end_dispatches_a_last_event_without_its_blank_line() -> None:
    assert decode("data: [DONE]") == [SseEvent("[DONE]")]
    assert decode("data: [DONE]\r") == [SseEvent("[DONE]")]


def test_feed_returns_events_as_soon_as_they_are_complete() -> None:
    decoder = SseDecoder()
    assert decoder.feed("data: a\n") == []
    assert decoder.feed("\ndata: b") == [SseEvent("a")]
    assert decoder.end() == [SseEvent("b")]


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "0.2"}) == 0.2
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    seconds = parse_retry_after({"retry-after": later})
    assert seconds is not None
    assert 50 < seconds <= 60


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0)
    for retry, (low, high) in enumerate([(0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (2.0, 4.0), (2.0, 4.0)]):
        assert low <= policy.backoff(retry) <= high
