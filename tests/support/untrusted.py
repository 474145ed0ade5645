"""What a widget snapshot looks like where `<style>` is stripped (JupyterLab untrusted, GitHub, nbviewer)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from synapse_nb.notebook.widgets._html import STYLE

# `.snb-card{border:...;padding:...}`: the rules that style one class alone, by class name -> properties.
SIMPLE_RULES: dict[str, list[str]] = {
    m[1]: [d.split(":", 1)[0].strip() for d in m[2].split(";") if ":" in d]
    for m in re.finditer(r"(?:^|})\s*\.([\w-]+)\{([^}]*)\}", STYLE.removeprefix("<style>"))
}


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, list[str], dict[str, str]]] = []
        self.in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "style":
            self.in_style = True
            return
        found = dict(attrs)
        style = {
            k.strip(): v.strip()
            for k, v in (d.split(":", 1) for d in (found.get("style") or "").split(";") if ":" in d)
        }
        self.elements.append((tag, (found.get("class") or "").split(), style))

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self.in_style = False


def unstyled(html: str) -> list[str]:
    """The looks a page without the stylesheet loses: elements whose class's rule is not inline, table
    cells left to the browser's defaults, and inline values an untrusted JupyterLab drops (`var(...)`)."""
    parser = _Elements()
    parser.feed(html)
    problems: list[str] = []
    for tag, classes, style in parser.elements:
        for name in classes:
            missing = [p for p in SIMPLE_RULES.get(name, []) if p not in style]
            if missing:
                problems.append(f"<{tag} class={name}> lacks {', '.join(missing)}")
        if tag in ("th", "td") and style.get("text-align") != "left":  # JupyterLab right-aligns table cells
            problems.append(f"<{tag}> is not left-aligned")
        if tag in ("th", "td") and "padding" not in style:
            problems.append(f"<{tag}> has no padding")
        problems.extend(f"<{tag}> {k}: {v}" for k, v in style.items() if "var(" in v)
    return problems
