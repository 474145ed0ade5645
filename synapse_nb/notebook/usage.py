"""usage_error: the one place a SynapseError becomes IPython's UsageError (one line, no traceback)."""

from __future__ import annotations

from IPython.core.error import UsageError

from ..errors import SynapseError

__all__ = ["usage_error"]


def usage_error(exc: SynapseError) -> UsageError:
    """The one place a SynapseError becomes IPython's UsageError (one line, no traceback)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return UsageError(text)
