"""Record and replay as providers: one that tapes another provider's exchanges, one that answers from a tape.

`RecordingProvider(inner, writer)` streams `inner` unchanged and writes each completed exchange (the
normalised request, its fingerprint and the whole streamed response) to a CassetteWriter.
`ReplayProvider` answers every request from a Cassette by fingerprint, streaming the recorded chunks
as if live, without network or key; a request the cassette does not hold raises ReplayMismatchError,
one line naming the first message that differs from the nearest recorded request. The format and the
fingerprint are synapse_nb/cassette.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from ..cassette import (
    CassetteWriter,
    build_request,
    chunk_record,
    provider_params,
    replay_chunks,
    response_record,
)
from ..cassette_reader import Cassette
from ..protocols import Completion, Provider, ProviderChunk
from ..types import Message, ToolSpec
from .registry import PROVIDERS, model_info

__all__ = ["RecordingProvider", "ReplayProvider", "replay_provider"]


class RecordingProvider:
    """`inner` as it is, with every completed exchange written to the cassette. Closing it closes nothing:
    the inner provider belongs to whoever made it (the ProviderCache)."""

    def __init__(self, inner: Provider, writer: CassetteWriter) -> None:
        self.inner = inner
        self.writer = writer
        self.name = inner.name
        self.model = inner.model

    def __repr__(self) -> str:
        return f"RecordingProvider({self.inner!r}, to={str(self.writer.path)!r})"

    @property
    def params(self) -> dict[str, Any]:
        return provider_params(self.inner)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        request = build_request(
            self.name, self.model, messages, tools, system=system, params=self.params, mask=self.writer.mask
        )
        stream: list[dict[str, Any]] = []
        async with contextlib.aclosing(self.inner.stream(messages, tools, system=system)) as chunks:  # type: ignore[type-var]
            async for chunk in chunks:
                if isinstance(chunk, Completion):
                    self.writer.exchange(request, response_record(stream, chunk))
                else:
                    stream.append(chunk_record(chunk))
                yield chunk

    async def aclose(self) -> None:
        return None


class ReplayProvider:
    """Answers from a cassette as provider `name`, model `model`; `params` must be what the recorded
    provider sent (replay_provider works them out from the model id)."""

    replays = True  # the agent marks its turns and LLM calls as replayed

    def __init__(self, name: str, model: str, cassette: Cassette, *, params: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.model = model
        self.cassette = cassette
        self.params: dict[str, Any] = dict(params or {})

    def __repr__(self) -> str:
        return f"ReplayProvider({self.name}:{self.model}, from={str(self.cassette.path)!r})"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), *, system: str | None = None
    ) -> AsyncIterator[ProviderChunk]:
        request = build_request(
            self.name, self.model, messages, tools, system=system, params=self.params, mask=self.cassette.mask
        )
        exchange = self.cassette.answer(request)
        for chunk in replay_chunks(exchange.response):
            yield chunk
            await asyncio.sleep(0)  # one loop turn per chunk: the cell's display streams as it would live

    async def aclose(self) -> None:
        return None


def replay_provider(
    model_id: str | None, cassette: Cassette, *, env: Mapping[str, str] = os.environ, max_tokens: int | None = None,
) -> ReplayProvider:
    """The replaying provider for a model id (default: SYNAPSE_MODEL, else scripted:demo); needs no key.

    Its parameters are those `resolve_provider` would give the real one (Anthropic: `max_tokens`)."""
    info = model_info(model_id, env=env)
    params: dict[str, Any] = {}
    if PROVIDERS[info.provider].wire == "anthropic":
        from .anthropic import DEFAULT_MAX_TOKENS

        params["max_tokens"] = max_tokens or DEFAULT_MAX_TOKENS
    return ReplayProvider(info.provider, info.model, cassette, params=params)
