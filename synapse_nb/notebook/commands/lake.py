"""The lake in the notebook: `%config SynapseMagics.publish_to = DIR` and `%synapse sql --lake DIR QUERY`."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...errors import SynapseError
from ..usage import usage_error

if TYPE_CHECKING:
    import pandas as pd

    from ...history.store import HistoryStore
    from ..recording.router import EventRouter

__all__ = ["publish_to", "split_lake", "sql"]

_LAKE = re.compile(r"""^--lake(?:\s+|=)(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>\S+))(?:\s+(?P<rest>.*))?$""",
                   re.DOTALL)


def publish_to(router: EventRouter, store: Callable[[], HistoryStore], dest: str) -> None:
    """Publish the history (`store`, opened when `dest` is set) to lake `dest` in the background after each turn
    (the router asks after every turn); empty `dest` stops it."""
    old, router.lake_publisher = router.lake_publisher, None
    if old is not None:
        old.close(timeout=0)  # a publish under way finishes on its own; nothing waits for it here
    if dest.strip():
        from ...history.lake_background import LakePublisher

        router.lake_publisher = LakePublisher(store(), dest.strip())


def split_lake(text: str, usage: str) -> tuple[str | None, str]:
    """`--lake DIR rest` -> (DIR, rest); text without the option -> (None, text). DIR may be quoted."""
    stripped = text.strip()
    if not stripped.startswith("--lake"):
        return None, text
    m = _LAKE.match(stripped)
    if m is None:
        raise UsageError(f"{usage}: --lake needs a directory, e.g. {usage} --lake /shared/lake SELECT 1")
    return m["dq"] if m["dq"] is not None else m["sq"] if m["sq"] is not None else m["bare"], m["rest"] or ""


def sql(lake: str, query: str) -> pd.DataFrame:
    """`%synapse sql --lake DIR QUERY`: any SQL over everyone's history published to lake DIR."""
    from ...history.lake_dir import is_lake

    if not query.strip():
        raise UsageError("%synapse sql --lake: missing query, e.g. %synapse sql --lake DIR SELECT * FROM tool_calls")
    path = Path(lake).expanduser()
    if not is_lake(path):
        raise UsageError(
            f"%synapse sql --lake: {path} is not a history lake (no _lake.json, no relation= folders); "
            f"publish into it first: synapse_nb.history().publish({str(path)!r})"
        )
    from ...history.lake_reader import Lake

    try:
        with Lake(path) as team:
            frame: pd.DataFrame = team.sql(query)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return frame
