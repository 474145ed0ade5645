"""`%synapse results`: the tool results the kernel holds (agent/held.py), listed as a DataFrame, and dropped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...errors import SynapseError
from ..usage import usage_error

if TYPE_CHECKING:
    import pandas as pd

    from ...agent.held import HeldResults

__all__ = ["command", "drop", "listing"]

USAGE = "%synapse results [drop NAME... | drop --all]"


def command(held: HeldResults, words: Sequence[str]) -> pd.DataFrame | None:
    """`%synapse results` (the listing) or `%synapse results drop NAME...|--all` (prints what it dropped)."""
    if not words:
        return listing(held)
    if words[0] != "drop":
        raise UsageError(f"%synapse results: unknown word {words[0]!r}; {USAGE}")
    print(drop(held, words[1:]))
    return None


def listing(held: HeldResults) -> pd.DataFrame:
    """One row per held result: its name (a variable of the notebook), what it is, its shape, the tool it came
    from and its size as the tool returned it (characters, about how many tokens)."""
    import pandas as pd

    rows = [{"name": h.name, "kind": h.kind, "shape": h.shape, "tool": h.tool, "chars": h.chars, "tokens": h.tokens}
            for h in held]
    return pd.DataFrame(rows, columns=["name", "kind", "shape", "tool", "chars", "tokens"])


def drop(held: HeldResults, names: Sequence[str]) -> str:
    """Forget the named held results (or `--all`) and their variables; one line saying what went."""
    if not names:
        raise UsageError(f"%synapse results drop: name a held result or use --all; {USAGE}")
    if list(names) == ["--all"]:
        gone = [h.name for h in held.clear()]
        return f"dropped {len(gone)} held result{'s' * (len(gone) != 1)}" + (f": {', '.join(gone)}" if gone else "")
    if "--all" in names:
        raise UsageError(f"%synapse results drop: --all drops every one; give it alone. {USAGE}")
    unknown = [n for n in names if n not in held]
    if unknown:
        known = ", ".join(held.names) or "none are held"
        raise UsageError(f"%synapse results drop: no held result named {unknown[0]!r} (held: {known})")
    try:
        for name in names:
            held.drop(name)
    except SynapseError as exc:  # dropped by another cell meanwhile
        raise usage_error(exc) from None
    return f"dropped {', '.join(names)}"
