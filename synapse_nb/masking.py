"""Secret masking, the one owner of its rules: what counts as a secret and how it is replaced.

Every path that could show or keep a secret masks through a `SecretMask`: the history redactor
(history/redact.py), the MCP error scrubber (mcp_client/failure.py), the provider error scrubber
(providers/_http.py) and the magics' display masking (notebook/commands/mcp.py). So a secret is masked
the same way everywhere, with the same marker, `[REDACTED]`.

What is masked:
- literal values registered with `add_secret` (header values, the secrets among a server's env values:
  `config_secrets`; API keys;
  for `Scheme credentials` values such as `Bearer abc...` the credentials alone too), and the values of
  environment variables named like *KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *PASS*, *AUTH*, *CREDENTIAL* when the
  mask was made. Values shorter than `MIN_SECRET_LENGTH` (6) are not masked literally: they would blank ordinary
  text everywhere (`KEYBOARD=1` must not blank every "1");
- API-key-like strings (`sk-...`, `sk-ant-...`, GitHub, AWS, Google, Slack, Hugging Face tokens, JWTs);
- `Authorization: <scheme> <credentials>` (and `x-api-key:`, `api-key:`, `x-auth-token:`) headers and
  long `Bearer <token>` values;
- secret-looking query parameters in URLs (`?api_key=...`, `&token=...`, `?key=...`) and the password of
  a URL's userinfo (`https://user:PASSWORD@host`);
- `NAME=value` where NAME looks like a secret variable (`OPENAI_API_KEY=...`);
- the value after a command-line flag named like a secret (`--api-token VALUE`, `--db-password=VALUE`,
  `--*key`, `--*secret`): `mask_argv` and `command_line` mask a command line word by word (the one way a
  server's command line is shown: `%mcp list`, the inspector, errors, events, spans), and the text rule
  masks the same in free text (a value after a space only when it has a digit or 8+ characters, so help
  text such as "the --api-key flag" stays readable);
- string values under secret-looking keys in JSON text (`"api_key": "..."`, also JSON inside a JSON
  string); `is_secret_name` tells the same for the keys of a mapping.

Fast path: most text (tool results, rows of numbers) holds no secret. A literal secret is looked for
only when one of its forms occurs in the text, and the patterns run only when a substring test over the
lower-cased text finds one of their trigger words: masking a line costs microseconds.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import shlex
import threading
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "MASK", "MIN_SECRET_LENGTH", "SecretMask", "command_line", "config_secrets", "is_secret_flag", "is_secret_name",
    "looks_like_key", "mask_argv", "mask_url", "secret_env_values",
]

MASK = "[REDACTED]"
"""What a masked secret becomes, everywhere (history file, displays, error messages, logs)."""

MIN_SECRET_LENGTH = 6
"""Literal secrets (registered or from the environment) shorter than this are not masked literally."""

_SECRET_ENV_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASS(?:WORD|WD|PHRASE)?(?![A-Z])|AUTH(?!OR)|CREDENTIAL|PRIVATE|COOKIE", re.IGNORECASE)
# A value that looks like a key by itself, whatever its name: long, one word, letters and digits mixed, and
# as varied as random text (a file name, a path, a word or a sentence is not)
_KEY_LIKE = re.compile(r"^[A-Za-z0-9_\-+/=.:]{20,}$")
_KEY_ENTROPY = 3.5  # bits per character; random base64 or hex of 20+ characters has more, words have less
_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]+:(?P<password>[^\s/@]+)@")
_KEY_WORDS = (
    r"api[_-]?key|apikey|secret|client[_-]?secret|password|passwd|passphrase|token|access[_-]?token|"
    r"refresh[_-]?token|auth[_-]?token|id[_-]?token|session[_-]?token|authorization|proxy[_-]?authorization|"
    r"x[_-]api[_-]key|cookie|set[_-]cookie|private[_-]?key"
)
_SECRET_NAME = re.compile(rf"^(?:[\w.-]*[_.-])?(?:{_KEY_WORDS})$", re.IGNORECASE)
_FLAG_WORDS = r"token|key|secret|password|passwd|passphrase|credentials?"
_SECRET_FLAG = re.compile(rf"^--?[A-Za-z0-9_-]*(?:{_FLAG_WORDS})$", re.IGNORECASE)
_SCHEME_VALUE = re.compile(r"^[A-Za-z][\w-]*\s+(\S+)$")  # "Bearer abc", "Basic abc", "token abc"
# How every name of _KEY_WORDS ends, with the quote that closes a JSON key: `"input_tokens": 5` holds no
# secret-looking key (`tokens"`), so counts of tokens do not run the JSON patterns.
_KEY_ENDS = ('key"', 'secret"', 'password"', 'passwd"', 'passphrase"', 'token"', 'authorization"', 'cookie"')

# (substrings one of which must occur, pattern): lower-case ones are looked for in the lower-cased text,
# upper-case ones in the text as written. A pattern's group "keep" survives; the rest of the match becomes MASK.
_RULES: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (("authorization",), re.compile(
        r"(?P<keep>(?i:authorization)[\"']?\s*[:=]\s*[\"']?)(?:[A-Za-z]+\s+)?[^\s\"'\\,;}\]]{4,}")),
    (("api-key", "auth-token"), re.compile(r"(?P<keep>(?i:x-api-key|api-key|x-auth-token)\s*:\s*)[^\s\"'\\,;}\]]{4,}")),
    (("bearer",), re.compile(r"(?P<keep>\b(?i:bearer)\s+)[A-Za-z0-9\-._~+/]{12,}=*")),
    (("sk-",), re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}")),
    (("akia",), re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    (("aiza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    (("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    (("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    (("@",), re.compile(r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@\"'\\]+:)[^\s/@\"'\\]+(?=@)")),
    (("key=", "token=", "secret=", "passw", "authorization=", "cookie="),  # ?api_key=... &token=... in a URL
     # (the name alone, `key`, too: Google's ?key=)
     re.compile(rf"(?P<keep>[?&](?:[\w.-]*[_.-])?(?i:{_KEY_WORDS}|key)=)[^&#\s\"'\\]{{4,}}")),
    (("KEY", "TOKEN", "SECRET", "PASSW"),  # upper case: looked for in the text as written (the pattern is cased)
     re.compile(r"(?P<keep>\b[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)\s*=\s*)[^\s\"'\\,;]{4,}")),
    (("--",),  # --api-token=VALUE, --api-token VALUE (after a space: a value with a digit or of 8+ characters)
     re.compile(rf"(?P<keep>(?<![\w-])--?[A-Za-z0-9_-]*(?i:{_FLAG_WORDS})(?:=[\"']?|\s+[\"']?(?=[^\s\"'-]*\d|"
                rf"[^\s\"'-]{{8,}})))(?!-)[^\s\"'\\]+")),
    (_KEY_ENDS,  # "api_key": "..." in JSON text
     re.compile(rf"(?P<keep>\"(?:[\w.-]*[_.-])?(?i:{_KEY_WORDS})\"\s*:\s*\")(?:[^\"\\]|\\.)+")),
    (tuple(e.replace('"', '\\"') for e in _KEY_ENDS),  # the same in JSON inside a JSON string
     re.compile(rf"(?P<keep>\\\"(?:[\w.-]*[_.-])?(?i:{_KEY_WORDS})\\\"\s*:\s*\\\")(?:[^\"\\]|\\[^\"])+")),
]


def _any_trigger(rules: list[tuple[tuple[str, ...], re.Pattern[str]]]) -> tuple[str, ...]:
    """What one of the rules' triggers contains, in lower case: each trigger, and the names of _KEY_ENDS (a
    few short words test faster than all their forms), without those that contain another (`key=` is
    found by `key`)."""
    triggers = {t.lower() for words, _ in rules for t in words} | {end.rstrip('"') for end in _KEY_ENDS}
    return tuple(sorted(t for t in triggers if not any(o != t and o in t for o in triggers)))


# What says whether any rule could match: 20 substring tests over the lower-cased text (each a C-level
# search) take ~30% less than one alternation regex over it (and an IGNORECASE alternation is ten times
# slower). Most lines (tool results, rows of numbers) have no trigger word at all; otherwise the rules' own
# triggers that contain a word found are tested, so a line of token counts (`"input_tokens": 5`) runs no pattern.
_ANY_TRIGGER = _any_trigger(_RULES)
# Each rule's triggers, each with the words of _ANY_TRIGGER it contains: a trigger none of whose words is in the
# text is not looked for (a 5 MB tool result beside one "tokens" costs the tests of the few triggers that
# contain "token", not every rule's).
_GATED_RULES = tuple(
    (tuple((t, frozenset(w for w in _ANY_TRIGGER if w in t.lower())) for t in words), words[0].isupper(), pattern)
    for words, pattern in _RULES
)
assert all(gate for gated, _, _ in _GATED_RULES for _, gate in gated), "each trigger contains a word of _ANY_TRIGGER"
_MIN_TEXT = MIN_SECRET_LENGTH  # no rule or literal secret matches a shorter text


def is_secret_name(name: str) -> bool:
    """Whether a mapping key or header name holds a secret value (`api_key`, `X-Api-Key`, `password`...)."""
    return _SECRET_NAME.match(name) is not None


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look secret (*KEY*, *TOKEN*, ...), long enough to mask."""
    env = os.environ if environ is None else environ
    return [v.strip() for k, v in env.items() if _SECRET_ENV_NAME.search(k) and len(v.strip()) >= MIN_SECRET_LENGTH]


def is_secret_flag(word: str) -> bool:
    """Whether a command-line flag names a secret value (`--api-token`, `--db-password`, `--key`): the word
    after it, or after its `=`, is masked."""
    return _SECRET_FLAG.match(word.partition("=")[0]) is not None


def mask_argv(argv: Sequence[str], quote: bool = False) -> list[str]:
    """A command line fit to show, word by word: the value after a flag named like a secret (`--api-token
    VALUE` and `--api-token=VALUE`) becomes MASK, and each word is masked by the text rules (a URL's
    password, `?token=`, `OPENAI_API_KEY=...`, key-like strings). `quote` shell-quotes the words as written
    (before masking, so a masked word is not quoted for its brackets)."""
    rules = _rules_only()
    out: list[str] = []
    after_flag = False
    for word in argv:
        shown = shlex.quote(word) if quote else word
        if after_flag:
            out.append(MASK)
            after_flag = False
        elif is_secret_flag(word):
            name, eq, _ = word.partition("=")
            if eq:
                out.append(f"{shlex.quote(name) if quote else name}={MASK}")
            else:
                out.append(shown)
                after_flag = True
        else:
            out.append(rules.mask(shown))
    return out


def command_line(command: str | None, args: Sequence[str] = ()) -> str:
    """`command args...` as one shell-quoted line with its secrets masked (mask_argv); "" without a command."""
    return " ".join(mask_argv([command, *args], quote=True)) if command else ""


def looks_like_key(value: str) -> bool:
    """Whether a value looks like a key or token by itself: a known prefix (`sk-`, `ghp_`, `xox…`, `AKIA…`, a
    JWT...), or a long single word of mixed letters and digits as varied as random text (not a path, a URL, a
    file name or an id made of words)."""
    value = value.strip()
    if _rules_only().mask(value) != value and MASK not in value:
        return True
    if not _KEY_LIKE.match(value) or "://" in value or value.startswith(("/", "~", ".")):
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    counts = {c: value.count(c) for c in set(value)}
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    # random text switches between digits, lower and upper case all the time; names made of words
    # (production-eu-west-1, MyReport2024) rarely do
    kinds = [c.isdigit() + 2 * c.isupper() for c in value if c.isalnum()]
    switches = sum(a != b for a, b in itertools.pairwise(kinds))
    return entropy >= _KEY_ENTROPY and switches >= max(8, len(value) // 3)


def config_secrets(env: Mapping[str, str], headers: Mapping[str, str] | None = None) -> list[str]:
    """The secrets among a server's settings, to mask literally from then on: every header value (headers carry
    credentials), and of the environment only what is secret: values of variables named like a secret (*TOKEN*,
    *KEY*, *SECRET*, *PASSWORD*, *PASS*, *AUTH*, *CREDENTIAL*, *PRIVATE*, *COOKIE*), values that look like keys
    (looks_like_key), and the password of a URL. Not every value: `DOCUMENT_ID=notebook.ipynb` is no secret, and
    masking it would blank every later mention of notebook.ipynb."""
    found = [v for v in (headers or {}).values() if v]
    for name, value in env.items():
        if not value:
            continue
        if (url := _URL_PASSWORD.match(value.strip())) is not None:
            found.append(url.group("password"))  # the URL rule masks it in the URL; this, wherever else it appears
        elif _SECRET_ENV_NAME.search(name) or looks_like_key(value):
            found.append(value)
    return found


def mask_url(url: str) -> str:
    """A URL fit to show: userinfo dropped and every query value masked (query strings often carry tokens)."""
    if not url:
        return ""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(f"{pair.partition('=')[0]}={MASK}" if "=" in pair else pair for pair in parts.query.split("&"))
    return urlunsplit((parts.scheme, netloc, parts.path, query if parts.query else "", parts.fragment))


def _keep_prefix(match: re.Match[str]) -> str:
    return (match.group("keep") if "keep" in match.re.groupindex else "") + MASK


class SecretMask:
    """Replaces secrets in text by `MASK`. Thread-safe; never raises; its repr shows no secret.

    `environ` is scanned for secret-looking variables when the mask is made (None: `os.environ`;
    pass `{}` for none).
    """

    def __init__(self, secrets: Iterable[str] = (), *, environ: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._forms: tuple[str, ...] = ()  # each secret as written, and as it appears inside JSON text
        self._literal: re.Pattern[str] | None = None
        for value in (*secret_env_values(environ), *secrets):
            self._add(value)
        self._compile()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._secrets)} literal secrets)"

    def add_secret(self, value: str) -> None:
        """Mask `value` from now on (ignored when shorter than MIN_SECRET_LENGTH characters)."""
        with self._lock:
            if self._add(value):
                self._compile()

    def _add(self, value: object) -> bool:
        if not isinstance(value, str):
            return False
        value = value.strip()
        added = False
        scheme = _SCHEME_VALUE.match(value)
        for candidate in (value, scheme.group(1) if scheme else ""):
            if len(candidate) >= MIN_SECRET_LENGTH and candidate not in self._secrets:
                self._secrets.add(candidate)
                added = True
        return added

    def _compile(self) -> None:
        forms = {form for s in self._secrets for form in (s, json.dumps(s, ensure_ascii=False)[1:-1])}
        ordered = sorted(forms, key=len, reverse=True)  # longest first: no partial leftovers
        self._literal = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._forms = tuple(ordered)

    def mask(self, text: str) -> str:
        """`text` with every secret replaced by `MASK` (JSON text stays valid JSON)."""
        if len(text) < _MIN_TEXT:
            return text
        literal, forms = self._literal, self._forms
        if literal is not None and any(form in text for form in forms):
            text = literal.sub(MASK, text)
        low = text.lower()
        found = {word for word in _ANY_TRIGGER if word in low}
        if not found:
            return text
        for triggers, cased, pattern in _GATED_RULES:
            where = text if cased else low
            for trigger, words in triggers:  # a plain loop: any(...) over a generator costs more per rule
                if not words.isdisjoint(found) and trigger in where:
                    text = pattern.sub(_keep_prefix, text)
                    break
        return text

    __call__ = mask


@functools.cache
def _rules_only() -> SecretMask:
    """A mask of the rules alone (no literal secrets, not the environment's), made once."""
    return SecretMask(environ={})
