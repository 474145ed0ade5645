"""A server's `sampling/createMessage` as a plain request a model can answer, and the reply it gets back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp.types as mt

from ..types import ContentBlock, Message, Role
from .convert import content_block

__all__ = ["SamplingReply", "SamplingRequest", "sampling_request", "sdk_result"]


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """What a server asks a model for: messages (text, images), a system prompt and limits.

    `model_hints` are substrings of model names the server prefers, first match wins; the
    priorities (0..1) are advisory. Sampling with tools is not declared, so none are offered.
    """

    server: str
    messages: tuple[Message, ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None
    include_context: str | None = None

    def pick_model(self, available: list[str]) -> str | None:
        """The first available model matching a hint (substring, in hint order), else None."""
        for hint in self.model_hints:
            for model in available:
                if hint and hint in model:
                    return model
        return None


@dataclass(frozen=True, slots=True)
class SamplingReply:
    """The model's answer: its text, the model that wrote it and why it stopped."""

    text: str
    model: str
    stop_reason: str | None = "endTurn"


def sampling_request(server: str, params: mt.CreateMessageRequestParams) -> SamplingRequest:
    prefs = params.model_preferences
    return SamplingRequest(
        server=server,
        messages=tuple(_message(m) for m in params.messages),
        max_tokens=params.max_tokens,
        system_prompt=params.system_prompt,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_hints=tuple(h.name for h in (prefs.hints or ()) if h.name) if prefs is not None else (),
        cost_priority=prefs.cost_priority if prefs is not None else None,
        speed_priority=prefs.speed_priority if prefs is not None else None,
        intelligence_priority=prefs.intelligence_priority if prefs is not None else None,
        include_context=params.include_context,
    )


def _message(message: mt.SamplingMessage) -> Message:
    texts: list[str] = []
    images: list[ContentBlock] = []
    for block in message.content_as_list:
        converted: Any = content_block(block)
        if converted.kind == "image":
            images.append(converted)
        elif converted.text is not None:
            texts.append(converted.text)
        else:
            texts.append(f"[{converted.kind} {converted.mime_type or ''}]".replace(" ]", "]"))
    role: Role = "assistant" if message.role == "assistant" else "user"
    return Message(role, "\n".join(texts), images=tuple(images))


def sdk_result(reply: SamplingReply) -> mt.CreateMessageResult:
    return mt.CreateMessageResult(
        role="assistant",
        content=mt.TextContent(type="text", text=reply.text),
        model=reply.model,
        stop_reason=reply.stop_reason,
    )
