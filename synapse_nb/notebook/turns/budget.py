"""check_prices: before a turn runs, whether its USD budget can be enforced (its model priced, the prices file good)."""

from __future__ import annotations

from decimal import Decimal

from IPython.core.error import UsageError

from ...errors import ConfigError

__all__ = ["check_prices"]


def _plain(amount: float) -> str:
    """An amount as the user typed it, without an exponent (`0.0000001`, not `1e-07`; `1`, not `1.0`)."""
    text = format(Decimal(repr(amount)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def check_prices(provider: str, model: str, *, budget: float | None, session_budget: float | None) -> str | None:
    """Before a cell runs: UsageError when a USD budget cannot be enforced (no price for the model, or a bad
    prices file); otherwise a note for the display when the prices file is bad (costs show as unknown)."""
    from ...pricing import price_table

    amount = _plain(budget or session_budget or 0.0)
    limit = f"--budget {amount}" if budget else f"SynapseMagics.session_budget {amount}"
    try:
        table = price_table()
    except ConfigError as exc:
        if budget or session_budget:
            raise UsageError(f"%%synapse: {exc}; {limit} USD cannot be enforced until it is fixed") from None
        return f"prices: {exc}; costs show as unknown until it is fixed"
    if (budget or session_budget) and table.lookup(provider, model) is None:
        raise UsageError(
            f"%%synapse: cost unknown for {provider}:{model} (no price), so {limit} USD cannot be enforced; add its "
            "price to ~/.config/synapse/prices.json (or the file SYNAPSE_PRICES names), or drop the budget"
        )
    return None
