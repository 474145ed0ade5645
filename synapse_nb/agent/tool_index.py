"""ToolIndex: connected tools ranked for a request in the user's words (BM25 by bm25s, stems by PyStemmer, and
meaning by a small embedding model where the `search` extra is installed).

What is indexed is everything a server says about a tool and about itself: the tool's name split into words,
its title, description, parameter names and their descriptions (and allowed values), and, as a second,
lighter ranking, the server's name, title and instructions (a request that names "the database" finds the
tools of the server whose instructions say it is one). What worked before in this user's history (a tool
that answered a request sharing this one's words, without error) breaks near-ties: it adds a little, in
proportion to the words shared, and never overrules a clear difference in the text.

Each BM25 score is divided by the best score of its kind for the request, so the weights below mix numbers of
one scale; they were chosen on the request set of tests/agent/tool_search_eval (requests.json says how).

With an embedder (agent/tool_meaning.py), the ranking by words and the ranking by meaning (the cosine of the
request and each tool's name, title and description) are fused by their ranks (reciprocal rank fusion, with its
usual constant, not one tuned here): a tool near the top of both lists wins over one at the top of only one,
whatever the scales. Past requests then count by meaning too: a tool that answered a request meaning nearly the
same as this one adds a little, still a tie-breaker.

What a request names is left out before it is ranked (`asked`): quoted text, a URL, a path, a number are what a
tool is to work on, not which tool ("put a comment on B7 saying 'estimate from the Q3 call'" is not about calls).
A file keeps its kind (`plan.xlsx` -> "xlsx"), which says which server's files they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import bm25s
import numpy as np
import Stemmer

from ..types import ToolSpec
from .tool_meaning import Embedder

__all__ = ["PastUse", "ToolHit", "ToolIndex", "asked", "words"]

Scores = np.ndarray[Any, np.dtype[np.float64]]
Vector = np.ndarray[Any, np.dtype[np.float32]]

NAME_WEIGHT = 2
"""Times a tool's name words count in its document: the name is the tool's shortest description."""
TITLE_WEIGHT = 2
SERVER_WEIGHT = 0.5
"""How much the server's own words (name, title, instructions) add to each of its tools' scores."""
HISTORY_WEIGHT = 0.2
"""How much a tool that answered a similar request before adds, times the share of this request's words that
request had (so a past request that shares one word of five adds a fifth of it): a tie-breaker."""
FUSION_K = 60
"""Reciprocal rank fusion's constant: a tool ranked r-th (from 1) in a list scores 1/(FUSION_K + r) for it (the
value Cormack, Clarke and Buettcher found good across collections, SIGIR 2009)."""
PAST_MEANING_WEIGHT = 0.5 / (FUSION_K + 1)
"""With an embedder: how much a tool adds, times the cosine, when a request it answered before means nearly the
same as this one (at most half of a first place in one list). This and the floor below were chosen on the eval's
history (weights from a third to a full first place, floors 0.3 and 0.4, ranked the same)."""
PAST_MEANING_FLOOR = 0.4
"""The cosine below which a past request is not taken as meaning the same as this one."""

_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
him his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours out over own please same she should so some such than that the their theirs them then there
these they this those through to too under until up very was we were what when where which while who whom why
will with would you your yours yourself let lets get got want need tell give show me us one thing things
""".split())  # noqa: SIM905  (a paragraph of words reads better than a list of 150 strings)
"""English words that carry no meaning of a tool (with the request words every request has: "tell me", "show")."""

_STEMMER = Stemmer.Stemmer("english")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
_QUOTED = re.compile(r"""(?<!\w)'[^']{2,}'(?!\w)|"[^"]{2,}"|`[^`]+`|[\u201c\u2018][^\u201d\u2019]{2,}[\u201d\u2019]""")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_FILE = re.compile(r"(?:[~\w.-]*/)*[\w-]+\.([A-Za-z][A-Za-z0-9]{1,4})\b")
_PATH = re.compile(r"[~\w.-]*(?:/[\w.-]+)+/?")
_NUMBER = re.compile(r"#?\b[0-9][0-9,.:]*\b")


def words(text: str) -> list[str]:
    """The stemmed words of a text for the index: names split at `_`, `-`, `.` and camelCase, lowercased,
    stop words left out (`read_text_file` -> read, text, file; `getCurrentTime` -> get, current, time)."""
    found: list[str] = []
    for token in _WORD.findall(_CAMEL.sub(" ", text)):
        low = token.lower()
        if len(low) > 1 and low not in _STOPWORDS:
            found.append(low)
    return list(_STEMMER.stemWords(found)) if found else []


def asked(request: str) -> str:
    """The request without what it names, which a tool works on but which says nothing of the tool: quoted text
    and URLs (a URL leaves the word "url"), paths (a file leaves its kind: `data/q1.xlsx` -> "xlsx") and numbers
    (`#412`, `50,000`). All of it when that would leave nothing.

    Measured on the first two request sets of tests/agent/tool_search_eval: it moved the top-3 rate from 82% to 85.5% on
    the first and from 66% to 68% on the held-out one (with meaning and history)."""
    text = _QUOTED.sub(" ", request)
    text = _URL.sub(" url ", text)
    text = _FILE.sub(lambda m: f" {m.group(1)} ", text)
    text = _NUMBER.sub(" ", _PATH.sub(" ", text))
    return text if words(text) else request


@dataclass(frozen=True, slots=True)
class PastUse:
    """A tool call of this user's history that worked: the request it answered and the tool (server and its own
    name; `server` None for a native tool)."""

    prompt: str
    server: str | None
    tool: str


@dataclass(frozen=True, slots=True)
class ToolHit:
    """One ranked tool: its spec and its score (higher is better; comparable within one search only)."""

    spec: ToolSpec
    score: float

    @property
    def name(self) -> str:
        return self.spec.name


class ToolIndex:
    """The tools of `specs` ranked by `search(request)`. `about` maps a server to what it says about itself
    (title and instructions); `past` is what worked before; `embedder`, where there is one, ranks by meaning too.
    Built when a turn's search first runs: indexing 159 tools takes ~30 ms here, ~50 ms more with an embedder the
    first time in a process (the bundled one remembers the texts it embedded: the next turn's index of the same
    tools takes ~15 ms in all); a search then takes under a millisecond."""

    def __init__(
        self, specs: Sequence[ToolSpec], about: Mapping[str, str] | None = None, past: Sequence[PastUse] = (),
        embedder: Embedder | None = None,
    ) -> None:
        self.specs = tuple(specs)
        self._tools = _bm25([tool_words(s) for s in self.specs])
        about = about or {}
        self._servers = sorted({s.server for s in self.specs if s.server is not None})
        self._server_of = [self._servers.index(s.server) if s.server is not None else -1 for s in self.specs]
        self._about = _bm25([words(f"{name} {about.get(name, '')}") for name in self._servers])
        keys = {(s.server, s.original_name or s.name): i for i, s in enumerate(self.specs)}
        known = [u for u in past if (u.server, u.tool) in keys]
        self._past = [(keys[(u.server, u.tool)], frozenset(words(asked(u.prompt)))) for u in known]
        self._embed = embedder
        self._meanings = embedder([_meaning_text(s) for s in self.specs]) if embedder and self.specs else None
        self._past_meanings = embedder([asked(u.prompt) for u in known]) if embedder and known else None

    def __len__(self) -> int:
        return len(self.specs)

    def search(self, request: str, limit: int = 5) -> list[ToolHit]:
        """The `limit` best tools for `request`, best first. Without an embedder, tools that share no word with it
        are left out; with one, every tool has a place by meaning, once the request uses a word some tool, server
        or earlier request uses (a request of words none of them knows, "zzzz", finds nothing rather than the
        tools nearest to noise). What the request names is left out first (`asked`)."""
        request = asked(request)
        query = words(request)
        if not query or not self.specs:
            return []
        score = self._by_words(query)
        if self._embed is not None and self._meanings is not None and score.any():
            score = self._fused(self._embed([request])[0], self._meanings, score)
        order = sorted(range(len(self.specs)), key=lambda i: (-score[i], self.specs[i].name))
        return [ToolHit(self.specs[i], float(score[i])) for i in order[:limit] if score[i] > 0]

    def _fused(self, request: Vector, meanings: Vector, by_words: Scores) -> Scores:
        """The ranking by words and the ranking by meaning (`request`: the request's vector, `meanings`: the
        tools') fused by rank, plus what past requests of the same meaning say."""
        by_meaning = (meanings @ request).astype(np.float64)
        score = 1 / (FUSION_K + _places(by_meaning)) + 1 / (FUSION_K + _places(by_words))
        if self._past_meanings is not None:
            closest = np.zeros(len(self.specs))
            for (tool, _), cosine in zip(self._past, self._past_meanings @ request, strict=True):
                if cosine >= PAST_MEANING_FLOOR:
                    closest[tool] = max(closest[tool], float(cosine))
            score = score + PAST_MEANING_WEIGHT * closest
        return score * (FUSION_K + 1) / 2  # 1.0: first in both lists (what `%mcp search` shows reads as a share)

    def _by_words(self, query: list[str]) -> Scores:
        """Each tool's score by the words it shares with the request (its own, its server's, and those of the
        requests it answered before)."""
        score = _scaled(_scores(self._tools, query, len(self.specs)))
        if self._servers:
            by_server = _scaled(_scores(self._about, query, len(self._servers)))
            score = score + SERVER_WEIGHT * np.array([by_server[i] if i >= 0 else 0.0 for i in self._server_of])
        if self._past:
            wanted = set(query)
            worked = np.zeros(len(self.specs))
            for tool, said in self._past:  # how much of this request an earlier one that this tool answered said
                worked[tool] = max(worked[tool], len(wanted & said) / len(wanted))
            score = score + HISTORY_WEIGHT * worked
        return score


def tool_words(spec: ToolSpec) -> list[str]:
    """The words a tool is found by: its name (weighted), title (weighted), description, and its parameters'
    names, descriptions and allowed values."""
    name = spec.original_name or spec.name
    title = spec.title or ""
    text = [*(words(name) * NAME_WEIGHT), *(words(title) * TITLE_WEIGHT), *words(spec.description)]
    text.extend(words(" ".join(_schema_text(spec.input_schema))))
    return text


def _meaning_text(spec: ToolSpec) -> str:
    """What a tool is embedded as: its server, title and name in words, and its description."""
    name = re.sub(r"[_\-.]+", " ", spec.original_name or spec.name)
    return f"{spec.server or ''} {spec.title or ''} {name}: {spec.description}".strip()


def _places(scores: Scores) -> Scores:
    """Each score's place from 1 (best) in descending order, ties sharing the best place of their group (so tools
    with no score at all share one last place rather than an order that would come from the catalog's)."""
    descending = np.sort(scores)[::-1]
    return np.searchsorted(-descending, -scores, side="left").astype(np.float64) + 1


def _schema_text(schema: Mapping[str, Any], depth: int = 0) -> Iterable[str]:
    """Parameter names, titles, descriptions and enum values of a JSON Schema (nested objects, array items)."""
    if depth > 3:
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for key, sub in properties.items():
            yield str(key)
            if isinstance(sub, Mapping):
                yield from _schema_text(sub, depth + 1)
    for key in ("title", "description"):
        value = schema.get(key)
        if isinstance(value, str) and depth > 0:
            yield value
    enum = schema.get("enum")
    if isinstance(enum, list):
        yield from (str(v) for v in enum if isinstance(v, str | int))
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _schema_text(items, depth + 1)


def _bm25(corpus: list[list[str]]) -> bm25s.BM25 | None:
    """A BM25 index over the documents (each a list of stemmed words); None when there is nothing to index."""
    if not any(corpus):
        return None
    index = bm25s.BM25()
    index.index([doc or [""] for doc in corpus], show_progress=False)
    return index


def _scores(index: bm25s.BM25 | None, query: list[str], size: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The BM25 score of each of the `size` documents of `index` for the query words (0 where none matches)."""
    known = [w for w in query if index is not None and w in index.vocab_dict]
    if index is None or not known:
        return np.zeros(size)
    return np.asarray(index.get_scores(known), dtype=np.float64)


def _scaled(scores: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Scores divided by the best one (0 to 1), so that parts of different scales can be added."""
    best = float(np.max(scores)) if scores.size else 0.0
    return scores / best if best > 0 else scores
