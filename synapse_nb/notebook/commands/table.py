"""Subcommand tables: each subcommand of a magic once (name, function, one-line help, options), and its help."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .options import OptionSet

__all__ = ["Subcommand", "SubcommandTable"]

C = TypeVar("C")
WIDTH = 106


@dataclass(frozen=True, slots=True)
class Subcommand(Generic[C]):
    """One subcommand: `run(context, rest)` gets the magic (its context) and the rest of the line after the
    name. `usage` is what follows the name in the help (`[ID]`), `help` its one line there; `forms` are its
    other forms, (usage, help) each (`new [NAME]`, "start a fresh session"); `options` its declared options,
    whose lines the help lists under it."""

    name: str
    run: Callable[[C, str], Any]
    help: str
    usage: str = ""
    forms: tuple[tuple[str, str], ...] = ()
    options: OptionSet | None = None


@dataclass(frozen=True, slots=True)
class SubcommandTable(Generic[C]):
    """The subcommands of one magic, in the order the help lists them."""

    prog: str
    entries: tuple[Subcommand[C], ...]

    def find(self, name: str) -> Subcommand[C] | None:
        return next((e for e in self.entries if e.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries)

    def help(self, column: int = 28, *, options_column: int = 24) -> str:
        """One line per form (`  model [ID]      show the model, ...`, wrapped), each subcommand's options
        below its forms (OptionSet.help)."""
        lines: list[str] = []
        for entry in self.entries:
            forms = ((f"{entry.name} {entry.usage}".strip(), entry.help),
                     *((f"{entry.name} {usage}".strip(), text) for usage, text in entry.forms))
            for usage, text in forms:
                lines.extend(_row(usage, text, column))
            if entry.options is not None:
                shown = entry.options.help(indent=6, column=options_column)
                if shown:
                    lines.append(shown)
        return "\n".join(lines)


def _row(usage: str, text: str, column: int) -> list[str]:
    """`  usage    text`: the text wrapped in its column; a usage too long for its column gets a line of its own."""
    left, pad = f"  {usage}", " " * column
    body = textwrap.wrap(text, width=WIDTH - column) or [""]
    if len(left) >= column - 1:
        return [left, *(pad + b for b in body)]
    return [left.ljust(column) + body[0], *(pad + b for b in body[1:])]
