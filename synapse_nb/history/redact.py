"""Secret redaction for the history: every line bound for the spool (and so the file) passes a Redactor.

The rules (what is a secret, the `[REDACTED]` marker, the minimum length) live in synapse_nb/masking.py,
shared with every other path that could show a secret; this module adds what the history needs on
top: `redact(obj)` walks a value, masks its strings, blanks string values under secret-looking keys
(`api_key`, `token`, `password`, `authorization`, ...) and makes it JSON-safe (string keys, lists,
NaN -> None).

The store redacts each event's JSON line as text (one pass over the line, which also covers every
nested value), so literal secrets are matched in their JSON-escaped form too. Each rule runs only when
one of its trigger words occurs in the lower-cased line: recording stays in the tens of microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..masking import MASK, SecretMask, is_secret_name

__all__ = ["REDACTED", "Redactor", "json_default"]

REDACTED = MASK

_MAX_DEPTH = 64


def json_default(obj: object) -> object:
    """`default=` for json.dumps: mappings, sets and bytes as JSON values, anything else as its str."""
    if isinstance(obj, Mapping):
        return {str(k): v for k, v in obj.items()}
    if isinstance(obj, set | frozenset):
        return list(obj)
    if isinstance(obj, bytes | bytearray):
        return obj.decode("utf-8", "replace")
    return str(obj)


class Redactor(SecretMask):
    """A SecretMask that also redacts nested JSON-like values. Thread-safe; never raises."""

    # `text` with every secret replaced by `[REDACTED]` (JSON text stays valid JSON); an alias, not a
    # wrapper, since the store calls it for every line it records.
    redact_text = SecretMask.mask

    def redact(self, obj: Any) -> Any:
        """A JSON-safe copy of `obj` with secrets replaced, recursing into mappings and sequences."""
        return self._walk(obj, 0)

    def _walk(self, obj: Any, depth: int) -> Any:
        if obj is None or isinstance(obj, bool | int):
            return obj
        if isinstance(obj, str):
            return self.mask(obj)
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else None
        if depth >= _MAX_DEPTH:
            return REDACTED
        if isinstance(obj, Mapping):
            out: dict[str, Any] = {}
            for key, value in obj.items():
                name = self.mask(str(key))
                if isinstance(value, str) and value and is_secret_name(name):
                    out[name] = REDACTED
                else:
                    out[name] = self._walk(value, depth + 1)
            return out
        if isinstance(obj, list | tuple | set | frozenset):
            return [self._walk(v, depth + 1) for v in obj]
        if isinstance(obj, bytes | bytearray):
            return self.mask(obj.decode("utf-8", "replace"))
        return self.mask(str(obj))
