"""The price table: bundled prices with their date, the user's file overriding and extending them, local models
at 0, unknown models unknown (never a guess), bad files as one line naming the file, and lazy loading."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from synapse_nb.errors import ConfigError
from synapse_nb.pricing import Price, bundled_taken, price_for, price_table, priced, usd, user_prices_path
from synapse_nb.types import Usage


def test_the_bundled_table_is_dated_and_covers_both_providers(clean_env: Path) -> None:
    taken = bundled_taken()
    assert len(taken) == 10
    assert taken[4] == "-"
    assert taken[7] == "-"
    table = price_table()
    providers = {key.split(":", 1)[0] for key in table.prices}
    assert providers == {"openai", "anthropic"}
    for key, price in table.prices.items():
        assert price.source == f"bundled:{taken}", key
        assert price.input_per_mtok > 0, key
        assert price.output_per_mtok > price.input_per_mtok, key  # output costs more on every listed model
        assert price.cache_read_per_mtok is not None, key
        assert price.cache_read_per_mtok < price.input_per_mtok, key
    sonnet = price_for("anthropic", "claude-sonnet-4-5")
    assert sonnet == Price(3.0, 15.0, 0.3, 3.75, source=f"bundled:{taken}")


def test_snapshots_fall_back_to_their_model_and_nothing_else_is_guessed(clean_env: Path) -> None:
    assert price_for("anthropic", "claude-sonnet-4-5-20250929") == price_for("anthropic", "claude-sonnet-4-5")
    assert price_for("openai", "gpt-4.1-mini-2025-04-14") == price_for("openai", "gpt-4.1-mini")
    assert price_for("openai", "gpt-4.1-mini-turbo") is None
    assert price_for("deepseek", "deepseek-chat") is None
    assert price_for("openai", "claude-sonnet-4-5") is None  # the provider is part of the key
    usage, price = priced("openai", "gpt-unknown", Usage(100, 10))
    assert price is None
    assert usage.cost_usd is None


def test_local_models_cost_nothing(clean_env: Path) -> None:
    for provider in ("ollama", "scripted"):
        usage, price = priced(provider, "anything", Usage(10_000, 5_000))
        assert usage.cost_usd == 0.0
        assert price is not None
        assert price.source == "local"


def test_cost_splits_uncached_cache_read_and_cache_write_tokens() -> None:
    price = Price(3.0, 15.0, 0.3, 3.75)
    usage = Usage(10_000, 1_000, cached_input_tokens=6_000, cache_write_tokens=3_000)
    assert price.input_cost(usage) == pytest.approx((1_000 * 3.0 + 6_000 * 0.3 + 3_000 * 3.75) / 1e6)
    assert price.cost(usage) == pytest.approx(price.input_cost(usage) + 1_000 * 15.0 / 1e6)
    # Without cache prices, cached tokens cost what input costs (never less than what is known).
    assert Price(1.0, 2.0).cost(usage) == pytest.approx((10_000 * 1.0 + 1_000 * 2.0) / 1e6)
    assert (Usage(1, 1, cost_usd=0.5) + Usage(1, 1, cost_usd=None)).cost_usd is None
    assert (Usage(1, 1, 1, 0, 0.5) + Usage(2, 1, 1, 1, 0.25)) == Usage(3, 2, 2, 1, 0.75)


def test_the_user_file_overrides_and_extends(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = clean_env / "home" / ".config" / "synapse" / "prices.json"
    assert user_prices_path() is None
    default.parent.mkdir(parents=True)
    default.write_text(json.dumps({
        "_note": "mine",
        "openai:gpt-4.1-mini": {"input_per_mtok": 0.5, "output_per_mtok": 2.0, "cache_read_per_mtok": 0.2},
        "deepseek:deepseek-chat": {"input_per_mtok": 0.28, "output_per_mtok": 0.42},
    }))
    assert user_prices_path() == default
    assert price_for("openai", "gpt-4.1-mini") == Price(0.5, 2.0, 0.2, None, source=f"file:{default}")
    assert price_for("deepseek", "deepseek-chat") == Price(0.28, 0.42, None, None, source=f"file:{default}")
    assert price_for("openai", "gpt-4.1").source.startswith("bundled:")  # type: ignore[union-attr]
    # A changed file is read again.
    default.write_text(json.dumps({"openai:gpt-4.1-mini": {"input_per_mtok": 0.7, "output_per_mtok": 2.8}}))
    assert price_for("openai", "gpt-4.1-mini").input_per_mtok == 0.7  # type: ignore[union-attr]
    # SYNAPSE_PRICES wins over the default file.
    other = clean_env / "other.json"
    other.write_text(json.dumps({"openai:gpt-4.1-mini": {"input_per_mtok": 9, "output_per_mtok": 9}}))
    monkeypatch.setenv("SYNAPSE_PRICES", str(other))
    assert price_for("openai", "gpt-4.1-mini").input_per_mtok == 9.0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[]", 'expected a JSON object of "provider:model" entries'),
        ('{"gpt-4.1": {"input_per_mtok": 1, "output_per_mtok": 1}}', "'gpt-4.1' is not \"provider:model\""),
        ('{"openai:x": 3}', "openai:x must be an object with input_per_mtok and output_per_mtok"),
        ('{"openai:x": {"input_per_mtok": 1}}', "openai:x.output_per_mtok is missing"),
        ('{"openai:x": {"input_per_mtok": -1, "output_per_mtok": 1}}', "openai:x.input_per_mtok must be a number >= 0"),
        ('{"openai:x": {"input_per_mtok": 1, "output_per_mtok": 1, "cached": 1}}', "unknown field(s) cached"),
    ],
)
def test_a_bad_prices_file_is_one_line_naming_it(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, content: str, problem: str
) -> None:
    path = clean_env / "prices.json"
    path.write_text(content)
    monkeypatch.setenv("SYNAPSE_PRICES", str(path))
    with pytest.raises(ConfigError) as caught:
        price_table()
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert problem in message
    assert "\n" not in message


def test_a_missing_synapse_prices_file_is_named(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNAPSE_PRICES", str(clean_env / "nope.json"))
    with pytest.raises(ConfigError, match=r"nope\.json: the prices file SYNAPSE_PRICES names does not exist"):
        price_for("openai", "gpt-4.1")


@pytest.mark.process
def test_prices_load_lazily() -> None:
    code = (
        "import sys, synapse_nb, synapse_nb.pricing as p\n"
        "print(p._bundled.cache_info().currsize)\n"
        "p.price_for('openai', 'gpt-4.1')\n"
        "print(p._bundled.cache_info().currsize)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "1"]


@pytest.mark.parametrize(("amount", "shown"), [
    (0.0, "$0"),
    (0.0000001, "$0.0000001"),
    (0.000000123456, "$0.000000123"),
    (0.000123456, "$0.000123"),
    (0.0123456, "$0.0123"),
    (1.5, "$1.50"),
    (1234.5, "$1,234.50"),
])
def test_usd_keeps_digits_below_a_cent_and_never_uses_an_exponent(amount: float, shown: str) -> None:
    assert usd(amount) == shown
