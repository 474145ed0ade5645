"""The tool search's eval (issue 35): requests as users say them, against the real catalogs of ten servers with
159 tools (snapshots in tests/agent/tool_search_eval/catalogs, kept true by test_tool_catalogs_live.py), ranked
four ways: plain BM25 over names and descriptions (the floor), our ranking by words (what the servers say about
their tools and themselves), the same fused with the ranking by meaning (the search extra's embedding model,
agent/tool_meaning.py), and that with this user's history.

Four request sets. requests.json (62) is the one the ranking's weights were chosen on; requests_heldout.json (79),
requests_heldout2.json (79) and requests_heldout3.json (78) were written afterwards, each by another author, from
the catalogs alone, without the other sets, the history or the ranking's code (their abouts say which requests
were dropped since, each a word-for-word repeat of an earlier set's). Issue 35 asks for the intended tool in the
top 3 for 85% of such requests at ~150 tools: the first set gives 85.5% (53 of 62); the held-out ones 68%, 57% and
56% (143 of 236 together, 61%; plain BM25 48%), against the ~75% plain BM25 the issue calibrates its sets by. The
floors asserted are what is met, so that a change that loses ground fails; the held-out sets' numbers are why
the issue is not claimed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import bm25s
import pytest

from synapse_nb.agent.tool_index import PastUse, ToolIndex, words
from synapse_nb.agent.tool_meaning import Embedder, bundled_embedder
from tests.support.catalog_servers import catalog_about, catalog_specs

EVAL = Path(__file__).parent / "tool_search_eval"
PAST = [PastUse(u["prompt"], u["server"], u["tool"])
        for u in json.loads((EVAL / "history.json").read_text(encoding="utf-8"))["uses"]]
SETS = {
    # the set, and the floors (by words, with meaning, with meaning and history) its measured rates meet
    "requests.json": (0.66, 0.80, 0.85),
    "requests_heldout.json": (0.59, 0.65, 0.68),
    "requests_heldout2.json": (0.56, 0.55, 0.56),
    "requests_heldout3.json": (0.52, 0.55, 0.56),
}


def _requests(name: str) -> list[dict[str, Any]]:
    requests: list[dict[str, Any]] = json.loads((EVAL / name).read_text(encoding="utf-8"))["requests"]
    return requests


class _PlainBM25:
    """The floor the issue calibrates by: BM25 with stemming over each tool's name and description, nothing else
    (not ToolIndex, whose request handling would lift it)."""

    def __init__(self) -> None:
        self.names = [s.name for s in catalog_specs()]
        self.index = bm25s.BM25()
        self.index.index([words(f"{s.original_name} {s.description}") or [""] for s in catalog_specs()],
                         show_progress=False)

    def top(self, request: str, n: int) -> list[str]:
        query = [w for w in words(request) if w in self.index.vocab_dict]
        if not query:
            return []
        scores = self.index.get_scores(query)
        return [self.names[i] for i in sorted(range(len(self.names)), key=lambda i: -scores[i])[:n] if scores[i] > 0]


def _top3_rate(requests: list[dict[str, Any]], index: ToolIndex | _PlainBM25) -> tuple[float, list[str]]:
    missed = []
    for request in requests:
        found = ([h.name for h in index.search(request["text"], 3)] if isinstance(index, ToolIndex)
                 else index.top(request["text"], 3))
        if not set(found) & set(request["tools"]):
            missed.append(f"{request['text']!r}: wanted {request['tools']}, got {found}")
    return 1 - len(missed) / len(requests), missed


def _embedder() -> Embedder:
    embedder = bundled_embedder()
    assert embedder is not None, "the search extra's model is missing: pip install -e '.[test]' (make venv)"
    return embedder


@pytest.mark.parametrize("name", SETS)
def test_the_set_is_big_enough_and_names_real_tools(name: str) -> None:
    requests = _requests(name)
    names = {s.name for s in catalog_specs()}
    assert len(requests) >= 40
    assert len(names) >= 150
    assert len({s.server for s in catalog_specs()}) == 10
    for request in requests:
        assert set(request["tools"]) <= names, request
    assert len({r["text"] for r in requests}) == len(requests)
    assert {(u.server, u.tool) for u in PAST} <= {(s.server, s.original_name) for s in catalog_specs()}
    assert not {u.prompt for u in PAST} & {r["text"] for r in requests}


def test_the_sets_share_no_request() -> None:
    texts = [{r["text"].lower() for r in _requests(name)} for name in SETS]
    for i, one in enumerate(texts):
        for other in texts[i + 1:]:
            assert not one & other


@pytest.mark.parametrize("name", SETS)
def test_each_set_keeps_its_rates_and_ours_beats_plain_bm25(name: str) -> None:
    requests, (words_floor, meaning_floor, best_floor) = _requests(name), SETS[name]
    specs = catalog_specs()
    rates = {
        "plain BM25": _top3_rate(requests, _PlainBM25()),
        "by words": _top3_rate(requests, ToolIndex(specs, catalog_about())),
        "with meaning": _top3_rate(requests, ToolIndex(specs, catalog_about(), embedder=_embedder())),
        "with meaning and history": _top3_rate(requests, ToolIndex(specs, catalog_about(), PAST, _embedder())),
    }
    print(f"{name}: top-3 of", len(requests), "requests,", len(specs), "tools:",
          ", ".join(f"{label} {rate:.1%}" for label, (rate, _) in rates.items()))
    plain_rate, by_words, meaning, best = (rate for rate, _ in rates.values())
    missed = "\n".join(rates["with meaning and history"][1])
    assert plain_rate < by_words <= best, missed
    assert by_words >= words_floor, "\n".join(rates["by words"][1])
    assert meaning >= meaning_floor, "\n".join(rates["with meaning"][1])
    assert best >= best_floor, missed
