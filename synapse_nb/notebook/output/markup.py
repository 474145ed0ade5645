"""Html: the HTML of cells and widgets, escaped by construction (markupsafe), with the entities it always had.

    Html('<span class="snb-badge" title="{}">{}</span>').format(tip, text)

`Html(...).format(...)`, `%`, `+` and `.join` escape every plain value they are given and take an Html value as
it is, so a value cannot reach the page unescaped by being forgotten: only an Html (a literal template, or what
a function that built one returns) is trusted. Escaping writes the entities of `html.escape(quote=True)`
(`&quot;`, `&#x27;`), those the cells and widgets have always shown, so saved outputs keep their bytes.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any, Self

from markupsafe import Markup

__all__ = ["Html", "esc", "join"]


class Html(Markup):
    """Text that is safe as HTML as it stands; see the module docstring. None escapes to empty text."""

    __slots__ = ()

    @classmethod
    def escape(cls, s: Any, /) -> Self:
        """`s` as safe HTML: an Html (anything with `__html__`) as it is, any other value escaped."""
        if hasattr(s, "__html__"):
            return cls(s.__html__())
        return cls(html.escape("" if s is None else str(s), quote=True))


def esc(value: object) -> Html:
    """`value` escaped (an Html as it is): text for an HTML widget, which sets innerHTML unsanitised."""
    return Html.escape(value)


def join(parts: Iterable[str], separator: str = "") -> Html:
    """The parts one after another, each plain one escaped (`separator` is trusted markup)."""
    return Html(separator).join(parts)
