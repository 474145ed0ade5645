"""A View's saved copy: the snapshot output beside a View's widget, which a notebook opened again later shows.

A View's widget needs its kernel; reopened in a new kernel (with no widget state saved: JupyterLab's default), the
widget's output is only "model not found", hidden, and the snapshot beside it shows (widgets/_snapshot.py). That
snapshot is the View's saved copy: its HTML, policy, the call's input and result, its last height and its storage
(what the user did: a page turned, a slider moved) as JSON; the script static/saved_view.js (built from
js/src/saved_view.js), which runs the View from them in the same sandboxed, origin-less frame as the live host once
the widget beside it shows only its error (never while the live View shows); and the text fallback, which is what
GitHub, nbviewer and an untrusted notebook show. The copy's other requests are answered with an error: they need
the kernel.

What the kernel answered the View's tool calls and resource reads (`answers`: a PDF viewer reads its document so) is
saved too, and the copy answers the same requests alike; any other request gets the error. The kernel takes the
snapshot again when the View's storage, height or answers change (`SnapshotRefresh`, at most once
per REFRESH_S), so a notebook saved at any time holds the View as the user left it. A View whose HTML and
data together pass MAX_COPY_CHARS keeps the text fallback alone (a notebook should not grow by tens of MB).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...masking import SecretMask
from ..output.markup import Html

if TYPE_CHECKING:
    from .view import AppView

__all__ = ["MAX_ANSWER_CHARS", "MAX_COPY_CHARS", "REFRESH_S", "SAVED_METHODS", "SnapshotRefresh", "kept_answers",
           "saved_copy"]

logger = logging.getLogger("synapse_nb.notebook")

MAX_COPY_CHARS = 8_000_000
"""The largest View (its HTML and data, as JSON) kept as a saved copy; a larger one keeps its text fallback."""
MAX_ANSWER_CHARS = 4_000_000
"""The most of the View's answered requests kept for its copy (as JSON); the oldest go first."""
SAVED_METHODS = frozenset({"tools/call", "resources/read"})
"""The View's requests whose answers its copy gives again (a PDF viewer reads its document with tool calls)."""
REFRESH_S = 1.0
"""At most one new snapshot per this many seconds while the user works in the View (each is the whole copy)."""

_SCRIPT = Path(__file__).with_name("static") / "saved_view.js"
_code: str | None = None


def _script() -> str:
    """static/saved_view.js, safe inside a `<script>` element: `</script` and `<!--`, which would end it early, occur in
    the minified code only inside template strings, where `<\\/script` and `<\\!--` read the same (a bare `</` may
    also end a regular expression, `/</g`, so it is left alone)."""
    global _code
    if _code is None:
        code = _SCRIPT.read_text(encoding="utf-8")
        _code = re.sub(r"</(script)", r"<\\/\1", code, flags=re.IGNORECASE).replace("<!--", "<\\!--")
    return _code


def saved_copy(view: AppView, fallback: Html) -> Html:
    """The snapshot of `view`: its saved copy (the JSON, the script) and `fallback` (the text, which the copy hides
    once it shows), or `fallback` alone when the View is too large to copy or the script is missing."""
    data = {
        "policy": view.csp_policy, "storage": dict(view.storage), "toolInput": dict(view.tool_input or {}),
        "toolResult": dict(view.tool_result), "answers": list(view.answers), "height": int(view.height),
        "hostVersion": view.host_version, "border": bool(view.prefers_border), "uri": view.resource_uri,
    }
    # what the user and the tools gave goes through the secret mask (the View's own code does not: a rule could
    # change its scripts)
    rest = SecretMask().mask(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    text = '{"html":' + json.dumps(view.html, ensure_ascii=False) + "," + rest[1:]
    if len(text) > MAX_COPY_CHARS or not _SCRIPT.exists():
        return fallback
    # `<` escaped: no value (the View's own `</script>`) can end the element early
    payload = Html(text.replace("<", "\\u003c").replace("&", "\\u0026"))
    return Html('<div class="snb-view-saved"><script type="application/json">{}</script>{}<script>{}</script></div>'
                ).format(payload, fallback, Html(_script()))


def kept_answers(answers: list[Any], method: str, params: Mapping[str, Any], result: Any) -> list[Any]:
    """`answers` with the kernel's answer to one more request of the View, the oldest dropped past MAX_ANSWER_CHARS;
    `answers` itself when nothing changed. A request the View makes again (a poll, a refresh) is kept without its
    answer, which was the answer of its moment: the copy answers it with its error (a poll the copy answered
    with a saved "nothing new" at once would spin). The request's `_meta` (progress tokens) is left out, as the
    copy leaves it out when it looks an answer up."""
    asked = {k: v for k, v in params.items() if k != "_meta"}
    key = _key(method, asked)
    for n, found in enumerate(answers):
        if _key(found["method"], found["params"]) == key:
            if found.get("repeated"):
                return answers
            return [*answers[:n], {"method": method, "params": asked, "repeated": True}, *answers[n + 1:]]
    kept = [*answers, {"method": method, "params": asked, "result": result}]
    sizes = [len(json.dumps(a, default=str)) for a in kept]
    while len(kept) > 1 and sum(sizes) > MAX_ANSWER_CHARS:
        kept.pop(0)
        sizes.pop(0)
    return kept


def _key(method: str, params: Mapping[str, Any]) -> str:
    return json.dumps([method, params], sort_keys=True, default=str)


class SnapshotRefresh:
    """Takes a View's snapshot again (`show`) when its storage, height or answers change, at most once per
    REFRESH_S, on the View's event loop (the changes come from the browser, on the kernel's shell thread)."""

    def __init__(self, view: AppView, show: Callable[[], None]) -> None:
        self.view = view
        self.show = show
        self._due: asyncio.TimerHandle | None = None
        view.observe(self._changed, names=["storage", "height", "answers"])

    def _changed(self, _change: Any) -> None:
        loop = self.view.loop
        if loop is None or loop.is_closed():
            self._run()
            return
        loop.call_soon_threadsafe(self._schedule, loop)

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._due is None:
            self._due = loop.call_later(REFRESH_S, self._run)

    def _run(self) -> None:
        self._due = None
        try:
            self.show()
        except Exception:  # a snapshot that cannot be sent leaves the last one; the View goes on
            logger.exception("taking the snapshot of the view %s again failed", self.view.resource_uri)
