"""A model of the providers' prompt caches for tests/support/llm_server.py: it reports cached tokens as they would.

Requests are cut into blocks (each tool, the system prompt, each message for OpenAI; each tool, system
block and content block for Anthropic), each counted as ceil(bytes / 4) tokens of its JSON. The cache
remembers hashes of prompt prefixes, block by block:

- OpenAI (automatic caching): every prefix of every request is cached; a request reads the longest
  cached prefix of itself (`cached_tokens`), and writes cost nothing extra.
- Anthropic (explicit caching): only the prefixes ending at a `cache_control` breakpoint are written
  (`cache_creation_input_tokens`: the last breakpoint's prefix minus what was read); a request reads
  the longest cached prefix ending at most `lookback` blocks before one of its breakpoints
  (`cache_read_input_tokens`). A request without breakpoints reads and writes nothing.

Prefixes shorter than `min_tokens` are never cached (the real minimum is 1024; tests use 0 by default).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Block", "PromptCache", "blocks_of", "tokens_of"]


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of a prompt: its bytes (without cache_control) and whether a breakpoint ends it."""

    data: bytes
    breakpoint: bool = False

    @property
    def tokens(self) -> int:
        return tokens_of(self.data)


def tokens_of(data: bytes) -> int:
    """The server's token count of some bytes: one token per 4 bytes, rounded up."""
    return math.ceil(len(data) / 4)


def _dump(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def _plain(block: Any) -> tuple[Any, bool]:
    if isinstance(block, Mapping) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}, True
    return block, False


def blocks_of(wire: str, body: Mapping[str, Any]) -> list[Block]:
    """The prompt of a request body as blocks, in cache order (tools, system, messages)."""
    out: list[Block] = []
    for tool in body.get("tools") or ():
        plain, mark = _plain(tool)
        out.append(Block(_dump(["tool", plain]), mark))
    if wire == "openai":
        out += [Block(_dump(["message", m])) for m in body.get("messages") or ()]
        return out
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append(Block(_dump(["system", system])))
    elif isinstance(system, list):
        for block in system:
            plain, mark = _plain(block)
            out.append(Block(_dump(["system", plain]), mark))
    for turn in body.get("messages") or ():
        content = turn.get("content")
        if isinstance(content, str):
            out.append(Block(_dump([turn.get("role"), content])))
            continue
        for block in content or ():
            plain, mark = _plain(block)
            out.append(Block(_dump([turn.get("role"), plain]), mark))
    return out


class PromptCache:
    """Remembers prompt prefixes across requests (thread-safe); `account` gives (input, read, write) tokens."""

    def __init__(self, *, min_tokens: int = 0, lookback: int = 20) -> None:
        self.min_tokens = min_tokens
        self.lookback = lookback
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    def account(self, wire: str, body: Mapping[str, Any]) -> tuple[int, int, int]:
        """(all prompt tokens, tokens read from the cache, tokens written to it) of one request."""
        blocks = blocks_of(wire, body)
        digests: list[bytes] = []  # digests[j]: the prefix of blocks[0..j]
        totals: list[int] = []
        h = hashlib.sha256()
        running = 0
        for b in blocks:
            h.update(len(b.data).to_bytes(8, "big") + b.data)
            digests.append(h.copy().digest())
            running += b.tokens
            totals.append(running)
        total = running
        marks = [i for i, b in enumerate(blocks) if b.breakpoint]
        if wire == "openai":
            candidates = list(range(len(blocks)))
            written = [j for j in candidates if totals[j] >= self.min_tokens]
        else:
            candidates = sorted({j for m in marks for j in range(max(0, m - self.lookback + 1), m + 1)})
            written = [j for j in marks if totals[j] >= self.min_tokens]
        with self._lock:
            read = max((totals[j] for j in candidates if digests[j] in self._seen), default=0)
            self._seen.update(digests[j] for j in written)
        write = max(0, totals[written[-1]] - read) if wire == "anthropic" and written else 0
        return total, read, write
