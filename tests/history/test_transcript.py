"""A recorded session's messages come back as the same Messages, so a later kernel can resume it."""

from __future__ import annotations

from synapse_nb.events import MessageAdded, SessionStarted
from synapse_nb.history.store import HistoryStore
from synapse_nb.history.transcript import waiting_calls
from synapse_nb.types import ContentBlock, Message, ToolCall, ToolResult

PNG = ContentBlock("image", data="iVBORw0KGgo=", mime_type="image/png")


def test_transcript_round_trips_tool_calls_errors_and_images(store: HistoryStore) -> None:
    conversation = [
        Message.system("be brief"),
        Message.user("plot it"),
        Message.assistant("Let me look.", (ToolCall("c1", "demo__image", {}), ToolCall("c2", "demo__fail", {"x": 1}))),
        Message.tool("c1", "[image image/png]", images=(PNG,)),
        Message.tool("c2", "Error: no", is_error=True),
        Message.assistant("Here it is."),
    ]
    results = {"c1": ToolResult((PNG,)), "c2": ToolResult.error("Error: no")}
    for seq, message in enumerate(conversation):
        store.record(MessageAdded(
            session_id="s1", message_id=f"m{seq}", seq=seq, message=message,
            result=results.get(message.tool_call_id or ""),
        ))
    store.record(MessageAdded(session_id="other", message_id="x", seq=0, message=Message.user("not this one")))
    store.flush()
    messages, next_seq = store.history().transcript("s1")
    assert messages == conversation[1:]  # the system prompt is sent separately, not kept in the transcript
    assert next_seq == len(conversation)


def test_find_session_by_name_then_id_prefix(store: HistoryStore) -> None:
    store.record(SessionStarted(session_id="abc123", name="analysis", model="scripted:demo"))
    store.record(SessionStarted(session_id="def456", name="other", model="scripted:demo"))
    history = store.history()
    assert history.find_session("analysis") == "abc123"
    assert history.find_session("def") == "def456"
    assert history.find_session("nope") is None


def test_the_calls_a_turn_left_waiting_are_those_of_the_last_reply_without_a_tool_message() -> None:
    asked = Message.assistant("", (ToolCall("c1", "fm__slow", {}), ToolCall("c2", "fm__echo", {})))
    assert waiting_calls([Message.user("go"), asked]) == list(asked.tool_calls)  # the kernel stopped during both
    assert [c.id for c in waiting_calls([Message.user("go"), asked, Message.tool("c2", "echo")])] == ["c1"]
    answered = [Message.user("go"), asked, Message.tool("c1", "done"), Message.tool("c2", "echo")]
    assert waiting_calls(answered) == []
    assert waiting_calls([*answered, Message.assistant("Both ran.")]) == []
    assert waiting_calls([Message.user("go"), asked, Message.user("never mind")]) == []  # a later prompt moved on
    assert waiting_calls([]) == []
