"""A View's saved copy (notebook/apps/saved_copy.py) as data: what goes through the secret mask and what does not,
the largest View copied, and the answers the copy may give again."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

import pytest

from synapse_nb.notebook.apps import saved_copy as sc
from synapse_nb.notebook.output.markup import Html

FALLBACK = Html('<pre class="snb-pre snb-view-fallback">{}</pre>').format("the text result")
SECRET = "sk-ant-api03-" + "q" * 40


def _view(**given: Any) -> Any:
    fields = {
        "html": "<!doctype html><script>const auth = 'Bearer ' + token;</script>", "csp_policy": "default-src 'none'",
        "storage": {}, "tool_input": {}, "tool_result": {"content": []}, "answers": [], "height": 0,
        "host_version": "1.0", "prefers_border": False, "resource_uri": "ui://x/view.html",
    }
    return SimpleNamespace(**{**fields, **given})


def _data(html: Html) -> dict[str, Any]:
    found = re.search(r'<script type="application/json">(.*?)</script>', str(html), re.DOTALL)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_what_the_user_and_the_tools_gave_is_masked_and_the_views_own_code_is_not() -> None:
    view = _view(tool_input={"key": SECRET}, storage={"note": f"token={SECRET}"},
                 tool_result={"content": [{"type": "text", "text": f"your key is {SECRET}"}]})
    data = _data(sc.saved_copy(view, FALLBACK))
    assert SECRET not in json.dumps(data)
    assert data["html"] == view.html  # a rule over `'Bearer ' + token` must not change the View's scripts
    assert str(FALLBACK) in str(sc.saved_copy(view, FALLBACK))


def test_a_view_too_large_to_copy_keeps_its_text_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sc, "MAX_COPY_CHARS", 100)
    assert sc.saved_copy(_view(), FALLBACK) == FALLBACK


def test_the_answers_kept_replace_a_repeated_request_by_a_refusal_and_drop_the_oldest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = sc.kept_answers([], "tools/call", {"name": "read", "arguments": {"at": 0}, "_meta": {"p": 1}}, {"n": 0})
    assert first == [{"method": "tools/call", "params": {"name": "read", "arguments": {"at": 0}}, "result": {"n": 0}}]
    second = sc.kept_answers(first, "tools/call", {"name": "read", "arguments": {"at": 1}}, {"n": 1})
    assert len(second) == 2
    polled = sc.kept_answers(second, "tools/call", {"arguments": {"at": 0}, "name": "read"}, {"n": 9})
    assert polled[0] == {"method": "tools/call", "params": {"name": "read", "arguments": {"at": 0}}, "repeated": True}
    assert sc.kept_answers(polled, "tools/call", {"name": "read", "arguments": {"at": 0}}, {"n": 10}) is polled
    monkeypatch.setattr(sc, "MAX_ANSWER_CHARS", 150)
    third = sc.kept_answers(polled, "tools/call", {"name": "read", "arguments": {"at": 2}}, {"n": "x" * 50})
    assert [a["params"]["arguments"]["at"] for a in third] == [2]
