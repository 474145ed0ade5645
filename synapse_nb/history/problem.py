"""One-line descriptions of unusable history files (no DuckDB here: the store uses them on any thread)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIX", "describe_error"]

FIX = "set SYNAPSE_DB to a writable path"


def describe_error(path: Path, exc: BaseException) -> str:
    """One line naming the path, what is wrong and the fix."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    low = text.lower()
    if isinstance(exc, OSError) or any(
        m in low for m in ("permission denied", "read-only file system", "not a directory", "cannot open file",
                           "no such file", "is a directory", "no space left")
    ):
        return f"history file {path} cannot be written ({text}): {FIX}"
    if "not a valid duckdb database" in low or "corrupt" in low or "could not read enough bytes" in low:
        return (
            f"history file {path} is not a readable DuckDB database ({text}): move it away or {FIX}"
        )
    return f"history file {path} cannot be used ({text}): move it away or {FIX}"
