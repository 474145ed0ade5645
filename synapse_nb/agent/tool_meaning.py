"""Meaning for the tool search: a small embedding model that puts a request and a tool's description near each
other when they say the same thing in different words ("is my working copy clean?" and git's "Shows the
working tree status"), which no ranking of shared words can.

The model is WordLlama's `l2_supercat` (256 dimensions, 16 MB, MIT): token embeddings distilled from large
language models, averaged, so a search costs a tokenizer pass and a matrix product in NumPy, no torch and no
GPU. It comes with the `search` extra (`pip install 'synapse_nb[search]'`), and its weights and tokenizer
come inside that wheel: nothing is downloaded, ever, so it works offline and adds no network call to a turn.
Without the extra the search ranks by words alone (agent/tool_index.py), as before.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = ["Embedder", "Remembering", "bundled_embedder"]

logger = logging.getLogger("synapse_nb.agent")

_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
REMEMBERED = 20_000
"""Texts whose vectors a process keeps (~20 MB at 256 dimensions); past that they are forgotten and embedded again."""


class Embedder(Protocol):
    """Texts to unit vectors: rows of one matrix, so that a dot product is the cosine of two texts."""

    def __call__(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]: ...


class _WordLlama:
    """WordLlama's inference over the weights and tokenizer its wheel carries (its own `WordLlama.load` looks
    for the tokenizer in a folder the wheel does not have and then downloads it: we open both files ourselves)."""

    def __init__(self, folder: Path) -> None:
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:  # wordllama.inference calls logging.basicConfig(INFO) when imported: a kernel's logging is not its own
            from safetensors import safe_open
            from tokenizers import Tokenizer
            from wordllama.inference import WordLlamaInference
        finally:
            root.handlers[:], root.level = handlers, level
        with safe_open(str(folder.joinpath(*_WEIGHTS)), framework="np") as weights:
            matrix = weights.get_tensor("embedding.weight")
        self._model = WordLlamaInference(matrix, Tokenizer.from_file(str(folder.joinpath(*_TOKENIZER))))

    def __call__(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = self._model.embed(list(texts), norm=True)
        return np.asarray(vectors, dtype=np.float32)


class Remembering:
    """An embedder that embeds each text once per process: a search's index is built per turn (and per `%mcp
    search`), and the same tools and past requests come back every time, each costing a tokenizer pass."""

    def __init__(self, embed: Embedder, limit: int = REMEMBERED) -> None:
        self._embed = embed
        self._limit = limit
        self._known: dict[str, np.ndarray[Any, np.dtype[np.float32]]] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        new = list(dict.fromkeys(t for t in texts if t not in self._known))
        if new:
            if len(self._known) + len(new) > self._limit:
                self._known.clear()  # forget the lot rather than track what was used last: a catalog is small
                new = list(dict.fromkeys(texts))
            self._known.update(zip(new, self._embed(new), strict=True))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._known[t] for t in texts])


@functools.cache
def bundled_embedder() -> Embedder | None:
    """The embedding model of the `search` extra, loaded once per process (~0.3 s), or None when the extra is not
    installed or its files are missing (the search then ranks by words alone, and says so in the log once)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent
    if not all(folder.joinpath(*part).is_file() for part in (_WEIGHTS, _TOKENIZER)):
        logger.warning("tool search: wordllama %s has no bundled l2_supercat model; ranking tools by words only",
                       folder)
        return None
    try:
        return Remembering(_WordLlama(folder))
    except Exception as exc:  # a broken install must not break the search: words alone still rank
        logger.warning("tool search: the embedding model could not be loaded (%s); ranking tools by words only", exc)
        return None
