"""Model prices: the bundled table (prices.json), the user's overrides, and the cost of a Usage.

Prices are USD per million tokens, keyed `provider:model`. The bundled table says when its prices were
taken (`_taken`); `~/.config/synapse/prices.json` (`$XDG_CONFIG_HOME` honoured), or the file
`SYNAPSE_PRICES` names, overrides and extends it entry by entry:

    {"openai:gpt-4.1-mini": {"input_per_mtok": 0.4, "output_per_mtok": 1.6, "cache_read_per_mtok": 0.1}}

`input_per_mtok` and `output_per_mtok` are required; `cache_read_per_mtok` and `cache_write_per_mtok`
default to the input price (so cached tokens are never billed below what is known). Models of the
local providers (`ollama:*`, `scripted:*`) cost 0, and so does a call replayed from a cassette
(`REPLAYED`, price_source `replay`). A model not in either table has no price: its cost
is None ("cost unknown"), never a guess; only a dated snapshot id (`claude-sonnet-4-5-20250929`,
`gpt-4.1-mini-2025-04-14`) falls back to the entry of the model it is a snapshot of.

Both files are read lazily, on the first price asked for; the user file again whenever it changes.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .types import Usage

__all__ = [
    "LOCAL_PROVIDERS",
    "Price",
    "REPLAYED",
    "PriceTable",
    "bundled_taken",
    "price_for",
    "price_table",
    "priced",
    "usd",
    "user_prices_path",
]

LOCAL_PROVIDERS = ("ollama", "scripted")
"""Providers whose models run locally: they cost 0."""

_FIELDS = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok")
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True, slots=True)
class Price:
    """One model's prices in USD per million tokens, and where they came from (`price_source`)."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    source: str = ""

    def input_cost(self, usage: Usage) -> float:
        """USD for the prompt side of `usage`: uncached, cache-read and cache-write tokens at their prices."""
        read = self.input_per_mtok if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        write = self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        written = min(usage.cache_write_tokens, usage.input_tokens - cached)
        plain = usage.input_tokens - cached - written
        return (plain * self.input_per_mtok + cached * read + written * write) / 1_000_000

    def cost(self, usage: Usage) -> float:
        """USD for `usage` (prompt and output)."""
        return self.input_cost(usage) + usage.output_tokens * self.output_per_mtok / 1_000_000


FREE = Price(0.0, 0.0, 0.0, 0.0, source="local")

REPLAYED = Price(0.0, 0.0, 0.0, 0.0, source="replay")
"""The price of a call answered from a cassette (record/replay): nothing was spent, whatever the model."""


@dataclass(frozen=True, slots=True)
class PriceTable:
    """The prices in force: bundled entries overridden/extended by the user's file."""

    prices: Mapping[str, Price]
    taken: str

    def lookup(self, provider: str, model: str) -> Price | None:
        """The price of `provider:model`, FREE for local providers, None when unknown."""
        if provider in LOCAL_PROVIDERS:
            return FREE
        key = f"{provider}:{model}"
        found = self.prices.get(key)
        if found is None:
            base = _SNAPSHOT.sub("", model)
            found = self.prices.get(f"{provider}:{base}") if base != model else None
        return found


def _parse(data: Any, source: str, where: str) -> dict[str, Price]:
    """Entries of a prices file (keys starting with `_` are notes); ConfigError naming `where` and the problem."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a JSON object of \"provider:model\" entries", path=where)
    out: dict[str, Price] = {}
    for key, entry in data.items():
        if key.startswith("_"):
            continue
        if ":" not in key:
            raise ConfigError(f"{where}: {key!r} is not \"provider:model\" (e.g. \"openai:gpt-4.1-mini\")", path=where)
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: {key} must be an object with input_per_mtok and output_per_mtok", path=where)
        unknown = sorted(set(entry) - set(_FIELDS))
        if unknown:
            raise ConfigError(
                f"{where}: {key} has unknown field(s) {', '.join(unknown)}; allowed: {', '.join(_FIELDS)}", path=where
            )
        values: dict[str, float | None] = {}
        for name in _FIELDS:
            value = entry.get(name)
            required = name in ("input_per_mtok", "output_per_mtok")
            if value is None and not required:
                values[name] = None
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                problem = "is missing" if value is None else f"must be a number >= 0, not {value!r}"
                raise ConfigError(f"{where}: {key}.{name} {problem}", path=where)
            values[name] = float(value)
        out[key] = Price(
            values["input_per_mtok"] or 0.0, values["output_per_mtok"] or 0.0, values["cache_read_per_mtok"],
            values["cache_write_per_mtok"], source=source,
        )
    return out


@functools.cache
def _bundled() -> tuple[dict[str, Price], str]:
    text = resources.files("synapse_nb").joinpath("prices.json").read_text(encoding="utf-8")
    data = json.loads(text)
    taken = str(data.get("_taken", "unknown date"))
    return _parse(data, f"bundled:{taken}", "synapse_nb/prices.json"), taken


def bundled_taken() -> str:
    """The date the bundled prices were taken (YYYY-MM-DD)."""
    return _bundled()[1]


def user_prices_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The user's prices file: `SYNAPSE_PRICES` (must exist), else ~/.config/synapse/prices.json if it exists."""
    env = os.environ if env is None else env
    explicit = env.get("SYNAPSE_PRICES", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    config_home = env.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    default = Path(config_home).expanduser() / "synapse" / "prices.json"
    return default if default.is_file() else None


@functools.lru_cache(maxsize=8)
def _user(path: str, stamp: tuple[int, int]) -> dict[str, Price]:
    del stamp  # part of the cache key only: a changed file is read again
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the prices file: {exc.strerror or exc}", path=path) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}", path=path) from None
    return _parse(data, f"file:{path}", path)


def price_table(env: Mapping[str, str] | None = None) -> PriceTable:
    """The prices in force now; ConfigError (one line: file and problem) when the user's file is bad."""
    bundled, taken = _bundled()
    path = user_prices_path(env)
    if path is None:
        return PriceTable(bundled, taken)
    try:
        st = path.stat()
    except OSError:
        raise ConfigError(
            f"{path}: the prices file SYNAPSE_PRICES names does not exist; fix the path or unset SYNAPSE_PRICES",
            path=str(path),
        ) from None
    return PriceTable({**bundled, **_user(str(path), (st.st_mtime_ns, st.st_size))}, taken)


def price_for(provider: str, model: str, env: Mapping[str, str] | None = None) -> Price | None:
    """The price of one model now (None: unknown)."""
    if provider in LOCAL_PROVIDERS:  # free whatever a prices file says (PriceTable.lookup): no file to look at
        return FREE
    return price_table(env).lookup(provider, model)


def priced(provider: str, model: str, usage: Usage, env: Mapping[str, str] | None = None) -> tuple[Usage, Price | None]:
    """`usage` with `cost_usd` set (None when the model has no price), and the price used."""
    price = price_for(provider, model, env)
    return replace(usage, cost_usd=None if price is None else price.cost(usage)), price


def usd(amount: float) -> str:
    """An amount of USD as people read it, never in exponent notation and never rounded to zero: cents for a
    dollar or more (`$12.34`), four decimals down to a cent (`$0.0123`), and three significant digits below
    a cent (`$0.000123`, `$0.0000001`): a budget line's spent, next-call bound and limit keep the digits
    that tell them apart."""
    if amount == 0 or not math.isfinite(amount):
        return "$0" if amount == 0 else f"${amount}"
    sign, size = ("-" if amount < 0 else ""), abs(amount)
    if size >= 1:
        return f"{sign}${size:,.2f}"
    if size >= 0.01:
        return f"{sign}${size:.4f}"
    decimals = 2 - math.floor(math.log10(size))
    return f"{sign}${size:.{decimals}f}".rstrip("0").rstrip(".")
