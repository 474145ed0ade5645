"""Magic options declared once (flag, value, choices, help): argparse is built from them, and so is the help.

    MODEL = Option("--model", "ID", help="provider:model for this cell")
    ASK = OptionSet("%%synapse", "%%synapse --help", (MODEL, ...))
    ns, words = ASK.parse(["--model", "scripted:demo"])     # ns.model == "scripted:demo"
    print(ASK.help())                                       # "  --model ID   provider:model for this cell"

Every mistake is one UsageError line naming the fix: an unknown option says which one was meant
(`--modle`: did you mean --model?), a value outside its choices lists them. `rest` names where every
word after the first `--` goes (`%mcp connect NAME -- COMMAND ARGS...`): those words are not options.
"""

from __future__ import annotations

import argparse
import difflib
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from IPython.core.error import UsageError

__all__ = ["Option", "OptionSet"]


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a magic line.

    `flag`: "--model" (or a positional's name, e.g. "name"); `value`: the value's name in the help
    ("ID"), None for a switch; `type` converts the value (raising ArgumentTypeError with the reason);
    `choices`: the values allowed (the help's `{choices}` shows them); `repeat`: may be given more than
    once (a list); `example`: a fix shown after a value that is not one of the choices.
    """

    flag: str
    value: str | None = None
    help: str = ""
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] = ()
    repeat: bool = False
    aliases: tuple[str, ...] = ()
    example: str | None = None

    @property
    def positional(self) -> bool:
        return not self.flag.startswith("-")

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def usage(self) -> str:
        """`--model ID`, `--background`, `NAME` (what the help's left column shows)."""
        if self.positional:
            return self.value or self.flag.upper()
        return f"{self.flag} {self.value}" if self.value else self.flag


@dataclass(frozen=True, slots=True)
class OptionSet:
    """The options of one magic (or subcommand): its parser, its help lines and its one-line errors."""

    prog: str
    hint: str
    options: tuple[Option, ...]
    rest: str | None = None

    def parse(self, words: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
        """The namespace of `words` and the words that are neither options nor declared positionals.

        An unknown option, a missing value, a value that does not convert or is not one of the
        choices: UsageError. With `rest`, the words after the first `--` are `ns.<rest>` (a list).
        """
        words = list(words)
        after: list[str] = []
        if self.rest is not None and "--" in words:
            cut = words.index("--")
            words, after = words[:cut], words[cut + 1 :]
        ns, extra = self._parser().parse_known_args(words)
        unknown = next((w for w in extra if w.startswith("-") and w != "-"), None)
        if unknown is not None:
            raise UsageError(f"{self.prog}: unknown option {unknown}{self.suggest(unknown)}; see {self.hint}")
        for option in self.options:
            value = getattr(ns, option.dest)
            values = value if isinstance(value, list) else [value]
            for one in values:
                if option.choices and one is not None and one not in option.choices:
                    fix = f"; e.g. {option.example}" if option.example else ""
                    raise UsageError(
                        f"{self.prog}: {option.flag} {one!r} is not one of {', '.join(option.choices)}{fix}")
        if self.rest is not None:
            setattr(ns, self.rest, after)
        return ns, extra

    def help(self, indent: int = 2, column: int = 22) -> str:
        """The option lines of the help: `  --model ID            what it does`, wrapped at 106 columns.

        Options without help text (positionals the usage lines explain) are left out."""
        lines: list[str] = []
        pad = " " * (indent + column)
        for option in self.options:
            if not option.help:
                continue
            text = option.help.format(choices=" | ".join(option.choices))
            left = " " * indent + option.usage
            body: list[str] = []
            for paragraph in text.split("\n"):
                body.extend(textwrap.wrap(paragraph, width=106 - len(pad)) or [""])
            if len(left) >= indent + column:  # a long flag: its text starts on the next line
                lines.append(left)
                lines.extend(pad + b for b in body)
            else:
                lines.append(left.ljust(indent + column) + body[0])
                lines.extend(pad + b for b in body[1:])
        return "\n".join(lines)

    def flags(self) -> tuple[str, ...]:
        """Every flag (aliases too), for "did you mean" and for tests."""
        return tuple(f for o in self.options if not o.positional for f in (o.flag, *o.aliases))

    def suggest(self, word: str) -> str:
        """` (did you mean --model?)` for a mistyped flag, "" when none is close."""
        name = word.partition("=")[0]
        close = difflib.get_close_matches(name, self.flags(), n=1, cutoff=0.6)
        return f" (did you mean {close[0]}?)" if close else ""

    def _parser(self) -> _Parser:
        parser = _Parser(self.prog, self.hint)
        for option in self.options:
            if option.positional:
                parser.add_argument(option.dest, nargs="?")
                continue
            kwargs: dict[str, Any] = {"dest": option.dest}
            if option.value is None:
                kwargs["action"] = "store_true"
            else:
                kwargs["action"] = "append" if option.repeat else "store"
                if option.type is not None:
                    kwargs["type"] = option.type
            parser.add_argument(option.flag, *option.aliases, **kwargs)
        return parser


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing and exiting."""

    def __init__(self, prog: str, help_hint: str) -> None:
        super().__init__(prog=prog, add_help=False, allow_abbrev=False)
        self.help_hint = help_hint

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^unrecognized arguments: ", "unknown option ", message)
        message = message.replace("argument ", "")
        message = re.sub(r"^(\S+): expected one argument$", r"\1 needs a value", message)
        raise UsageError(f"{self.prog}: {message}; see {self.help_hint}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(f"{self.prog}: {message or 'bad arguments'}; see {self.help_hint}")
