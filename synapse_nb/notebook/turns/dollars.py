"""Dollar signs in an answer's Markdown as text, never as math delimiters.

JupyterLab typesets the text between two `$` of a Markdown output as LaTeX: MathJax scans the rendered page
(inline `$...$`, with `\\$` as an escape), after `marked` has already turned a Markdown `\\$` into a bare `$`.
So "Revenue was $12,400 in Q1 and $15,100 in Q2" showed as math with its spaces eaten, and neither `\\$` nor
the entity `&#36;` helps (checked in JupyterLab 4 with Chromium). A `$` written as `<span>&#36;</span>` is
no delimiter anywhere: JupyterLab's math extraction never sees a `$` in the source, MathJax does not match
across the span, and GitHub's Markdown (which documents `<span>$</span>` for this) renders the entity as `$`.
Code spans and fenced blocks keep their `$` as written (HTML is not read there). Only the published
Markdown changes: the answer's text (`_synapse.text`, the history) stays as the model wrote it.
"""

from __future__ import annotations

import re

__all__ = ["DOLLAR", "text_dollars"]

DOLLAR = "<span>&#36;</span>"
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")
_DOLLAR = re.compile(r"\\?\$")


def text_dollars(markdown: str) -> str:
    """`markdown` with every `$` outside code (and a `\\$` the model wrote to mean one) as DOLLAR."""
    if "$" not in markdown:
        return markdown
    out: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines(keepends=True):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif opening:
            fence = opening.group(1)
            out.append(line)
        else:
            out.append(_inline(line))
    return "".join(out)


def _inline(line: str) -> str:
    if "$" not in line:
        return line
    parts: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(line):
        parts.append(_DOLLAR.sub(DOLLAR, line[last:span.start()]))
        parts.append(span.group(0))
        last = span.end()
    parts.append(_DOLLAR.sub(DOLLAR, line[last:]))
    return "".join(parts)
