"""`${env:VAR}` / `${VAR}` references in config values: one expansion shared by server entries and their `oauth`."""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["expand_vars"]

_VAR = re.compile(r"\$\{(env:)?([^}]*)\}")


def expand_vars(value: str, environ: Mapping[str, str], missing: list[str], key: str) -> str:
    """Replace `${env:VAR}` and `${VAR}` from `environ`; unknown variables are collected in `missing`
    (as "VAR (in KEY)") and expand to "", so the caller can report them all in one line."""

    def sub(match: re.Match[str]) -> str:
        var = match.group(2)
        if var in environ:
            return environ[var]
        missing.append(f"{var} (in {key})")
        return ""

    return _VAR.sub(sub, value)
