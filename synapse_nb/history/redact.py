"""Secret redaction: every line bound for the history spool (and so the file) passes through a Redactor.

What is replaced by `[REDACTED]`:
- API-key-like strings (`sk-...`, `sk-ant-...`, GitHub, AWS, Google, Slack, Hugging Face tokens, JWTs);
- `Authorization: <scheme> <credentials>` and long `Bearer <token>` values;
- string values under secret-looking keys (`api_key`, `token`, `password`, `authorization`, ...),
  in mappings (`redact`) and in JSON text (`"api_key": "..."`, `redact_text`);
- `NAME=value` where NAME looks like a secret variable (`OPENAI_API_KEY=...`);
- literal values registered with `add_secret` (header values, env values of server configs), and the
  values of environment variables named like *KEY*, *TOKEN*, *SECRET*, *PASSWORD* when the redactor
  was made (values of 8 characters or more, so `KEYBOARD=1` does not blank every "1").

The store redacts each event's JSON line as text (one pass over the line, which also covers every
nested value), so literal secrets are matched in their JSON-escaped form too. Each rule runs only when
a cheap substring test says it could match: recording stays in the tens of microseconds.
`redact(obj)` walks a value instead and also makes it JSON-safe (string keys, lists, NaN -> None).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["REDACTED", "Redactor", "json_default", "secret_env_values"]

REDACTED = "[REDACTED]"

_MIN_ENV_SECRET = 8
_MIN_ADDED_SECRET = 6  # shorter values ("1", "yes") would blank ordinary text everywhere
_MIN_TEXT = 6  # no rule or secret matches a shorter string
_MAX_DEPTH = 64

_SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_KEY_WORDS = (
    r"api[_-]?key|apikey|secret|client[_-]?secret|password|passwd|passphrase|token|access[_-]?token|"
    r"refresh[_-]?token|auth[_-]?token|id[_-]?token|session[_-]?token|authorization|proxy[_-]?authorization|"
    r"x[_-]api[_-]key|cookie|set[_-]cookie|private[_-]?key"
)
_SECRET_KEY = re.compile(rf"^(?:[\w.-]*[_.-])?(?:{_KEY_WORDS})$", re.IGNORECASE)

# (lower-case substrings one of which must occur, pattern). A pattern's group "keep" survives; the
# rest of the match becomes REDACTED.
_RULES: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (("authorization",), re.compile(
        r"(?P<keep>(?i:authorization)[\"']?\s*[:=]\s*[\"']?)(?:[A-Za-z]+\s+)?[^\s\"'\\,;}\]]{4,}")),
    (("bearer",), re.compile(r"(?P<keep>\b(?i:bearer)\s+)[A-Za-z0-9\-._~+/]{12,}=*")),
    (("sk-",), re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}")),
    (("akia",), re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    (("aiza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    (("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    (("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    (("key", "token", "secret", "passw"),
     re.compile(r"(?P<keep>\b[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)\s*=\s*)[^\s\"'\\,;]{4,}")),
    (("key", "token", "secret", "passw", "authorization", "cookie"),  # "api_key": "..." in JSON text
     re.compile(rf"(?P<keep>\"(?:[\w.-]*[_.-])?(?i:{_KEY_WORDS})\"\s*:\s*\")(?:[^\"\\]|\\.)+")),
    (("key", "token", "secret", "passw", "authorization", "cookie"),  # the same in JSON inside a JSON string
     re.compile(rf"(?P<keep>\\\"(?:[\w.-]*[_.-])?(?i:{_KEY_WORDS})\\\"\s*:\s*\\\")(?:[^\"\\]|\\[^\"])+")),
]


# One scan that says whether any rule could match: most lines (tool results, rows of numbers) have
# none of the trigger words, and a single C-level search beats testing each trigger in Python.
# (Searched in the lower-cased line: an IGNORECASE alternation is ten times slower.)
_ANY_TRIGGER = re.compile("|".join(re.escape(t) for t in sorted({t for triggers, _ in _RULES for t in triggers})))


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look secret (*KEY*, *TOKEN*, ...), 8 chars or more."""
    env = os.environ if environ is None else environ
    return [v for k, v in env.items() if _SECRET_ENV_NAME.search(k) and len(v.strip()) >= _MIN_ENV_SECRET]


def json_default(obj: object) -> object:
    """`default=` for json.dumps: mappings, sets and bytes as JSON values, anything else as its str."""
    if isinstance(obj, Mapping):
        return {str(k): v for k, v in obj.items()}
    if isinstance(obj, set | frozenset):
        return list(obj)
    if isinstance(obj, bytes | bytearray):
        return obj.decode("utf-8", "replace")
    return str(obj)


def _keep_prefix(match: re.Match[str]) -> str:
    return (match.group("keep") if "keep" in match.re.groupindex else "") + REDACTED


class Redactor:
    """Replaces secrets in text and in nested JSON-like values. Thread-safe; never raises."""

    def __init__(self, secrets: Sequence[str] = (), *, environ: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._forms: tuple[str, ...] = ()  # each secret as written, and as it appears inside JSON text
        self._literal: re.Pattern[str] | None = None
        for value in secret_env_values(environ):
            self._secrets.add(value.strip())
        for value in secrets:
            self._add(value)
        self._compile()

    def add_secret(self, value: str) -> None:
        """Never record `value` (ignored when shorter than 6 characters: it would blank ordinary text)."""
        with self._lock:
            if self._add(value):
                self._compile()

    def _add(self, value: object) -> bool:
        if not isinstance(value, str):
            return False
        value = value.strip()
        if len(value) < _MIN_ADDED_SECRET or value in self._secrets:
            return False
        self._secrets.add(value)
        return True

    def _compile(self) -> None:
        forms = {form for s in self._secrets for form in (s, json.dumps(s, ensure_ascii=False)[1:-1])}
        ordered = sorted(forms, key=len, reverse=True)  # longest first: no partial leftovers
        self._literal = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._forms = tuple(ordered)

    def redact_text(self, text: str) -> str:
        """`text` with every secret replaced by `[REDACTED]` (JSON text stays valid JSON)."""
        if len(text) < _MIN_TEXT:
            return text
        literal, forms = self._literal, self._forms
        if literal is not None and any(form in text for form in forms):
            text = literal.sub(REDACTED, text)
        low = text.lower()
        if _ANY_TRIGGER.search(low) is None:
            return text
        for triggers, pattern in _RULES:
            if any(t in low for t in triggers):
                text = pattern.sub(_keep_prefix, text)
        return text

    def redact(self, obj: Any) -> Any:
        """A JSON-safe copy of `obj` with secrets replaced, recursing into mappings and sequences."""
        return self._walk(obj, 0)

    def _walk(self, obj: Any, depth: int) -> Any:
        if obj is None or isinstance(obj, bool | int):
            return obj
        if isinstance(obj, str):
            return self.redact_text(obj)
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else None
        if depth >= _MAX_DEPTH:
            return REDACTED
        if isinstance(obj, Mapping):
            out: dict[str, Any] = {}
            for key, value in obj.items():
                name = self.redact_text(str(key))
                if isinstance(value, str) and value and _SECRET_KEY.match(name):
                    out[name] = REDACTED
                else:
                    out[name] = self._walk(value, depth + 1)
            return out
        if isinstance(obj, list | tuple | set | frozenset):
            return [self._walk(v, depth + 1) for v in obj]
        if isinstance(obj, bytes | bytearray):
            return self.redact_text(obj.decode("utf-8", "replace"))
        return self.redact_text(str(obj))
