"""The tool search's eval (issue 35): requests as users say them, against the real catalogs of ten servers with
159 tools (snapshots in tests/agent/tool_search_eval/catalogs, kept true by test_tool_catalogs_live.py), ranked
four ways: plain BM25 over names and descriptions (the floor), our ranking by words (what the servers say about
their tools and themselves), the same fused with the ranking by meaning (the search extra's embedding model,
agent/tool_meaning.py), and that with this user's history.

Issue 35 asks for the intended tool in the top 3 for 85% of such requests at ~150 tools. This set gives 66% by
words, 77% with meaning and 82% with meaning and history: the floors asserted are what is met (so that a change
that loses ground fails), and the issue's 85% is not claimed."""

from __future__ import annotations

import json
from pathlib import Path

from synapse_nb.agent.tool_index import PastUse, ToolIndex
from synapse_nb.agent.tool_meaning import Embedder, bundled_embedder
from synapse_nb.types import ToolSpec
from tests.support.catalog_servers import catalog_about, catalog_specs

EVAL = Path(__file__).parent / "tool_search_eval"
REQUESTS = json.loads((EVAL / "requests.json").read_text(encoding="utf-8"))["requests"]
PAST = [PastUse(u["prompt"], u["server"], u["tool"])
        for u in json.loads((EVAL / "history.json").read_text(encoding="utf-8"))["uses"]]


def _top3_rate(index: ToolIndex) -> tuple[float, list[str]]:
    missed = []
    for request in REQUESTS:
        found = [h.name for h in index.search(request["text"], 3)]
        if not set(found) & set(request["tools"]):
            missed.append(f"{request['text']!r}: wanted {request['tools']}, got {found}")
    return 1 - len(missed) / len(REQUESTS), missed


def _embedder() -> Embedder:
    embedder = bundled_embedder()
    assert embedder is not None, "the search extra's model is missing: pip install -e '.[test]' (make venv)"
    return embedder


def test_the_set_is_big_enough_and_names_real_tools() -> None:
    names = {s.name for s in catalog_specs()}
    assert len(REQUESTS) >= 40
    assert len(names) >= 150
    assert len({s.server for s in catalog_specs()}) == 10
    for request in REQUESTS:
        assert set(request["tools"]) <= names, request
    assert {(u.server, u.tool) for u in PAST} <= {(s.server, s.original_name) for s in catalog_specs()}
    assert not {u.prompt for u in PAST} & {r["text"] for r in REQUESTS}


def test_each_signal_finds_the_intended_tool_more_often_than_the_last() -> None:
    specs = catalog_specs()
    plain = ToolIndex([ToolSpec(name=s.name, description=s.description, input_schema={}, original_name=s.original_name)
                       for s in specs])
    rates = {
        "plain BM25": _top3_rate(plain),
        "by words": _top3_rate(ToolIndex(specs, catalog_about())),
        "with meaning": _top3_rate(ToolIndex(specs, catalog_about(), embedder=_embedder())),
        "with meaning and history": _top3_rate(ToolIndex(specs, catalog_about(), PAST, _embedder())),
    }
    print("top-3 of", len(REQUESTS), "requests,", len(specs), "tools:",
          ", ".join(f"{name} {rate:.0%}" for name, (rate, _) in rates.items()))
    plain_rate, by_words, meaning, best = (rate for rate, _ in rates.values())
    missed = "\n".join(rates["with meaning and history"][1])
    assert plain_rate < by_words < meaning < best, missed
    assert by_words >= 0.65, "\n".join(rates["by words"][1])
    assert meaning >= 0.75, "\n".join(rates["with meaning"][1])
    assert best >= 0.80, missed
