"""The lake in the notebook: `publish_to`, `%synapse publish [LAKE]`, `%synapse lake compact|expire|migrate`
and `%synapse sql --lake LAKE QUERY`. LAKE: a folder, s3://bucket/prefix, a catalog URI or a lake config
.json (history/lake_spec.py); left out, the `publish_to` lake, else SYNAPSE_LAKE."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...errors import SynapseError
from ..usage import usage_error

if TYPE_CHECKING:
    import pandas as pd

    from ...history.lake import Published
    from ...history.lake_spec import LakeSpec
    from ..state import SynapseState

__all__ = ["LAKE_USAGE", "lake", "publish", "publish_to", "split_lake", "sql"]

LAKE_USAGE = "%synapse lake compact [LAKE] | expire [LAKE] [--older-than 7d] | migrate OLD_DIR NEW_LAKE"
FLUSH_TIMEOUT = 10.0  # seconds to wait for the store's own ingest before publishing what is in
_LAKE = re.compile(r"""^--lake(?:\s+|=)(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>\S+))(?:\s+(?P<rest>.*))?$""",
                   re.DOTALL)
_AGE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>[smhd])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def publish_to(state: SynapseState, dest: str) -> None:
    """Publish the history to lake `dest` in the background after each turn; empty `dest` stops it. A `dest`
    that names no lake raises UsageError (one line) and leaves publishing off."""
    old, state.lake_publisher = state.lake_publisher, None
    if old is not None:
        old.close(timeout=0)  # a publish under way finishes on its own; nothing waits for it here
    if dest.strip():
        from ...history.lake_background import LakePublisher

        try:
            state.lake_publisher = LakePublisher(state.store, dest.strip())
        except SynapseError as exc:
            raise usage_error(exc) from None


def publish(state: SynapseState, words: list[str]) -> Published:
    """`%synapse publish [LAKE]`: publish this kernel's history file into LAKE now (exactly once)."""
    if len(words) > 1:
        raise UsageError("%synapse publish: name at most one lake, e.g. %synapse publish /shared/team-lake")
    target = _target(state, words[0] if words else None)
    try:
        state.store.flush(FLUSH_TIMEOUT)
        return state.store.history().publish(target)
    except SynapseError as exc:
        raise usage_error(exc) from None


def lake(state: SynapseState, words: list[str]) -> object:
    """`%synapse lake compact|expire|migrate ...`: look after a lake, or move a retired Parquet lake into one."""
    if not words:
        raise UsageError(f"%synapse lake: say what to do: {LAKE_USAGE}")
    action, args = words[0], words[1:]
    try:
        if action == "compact":
            if len(args) > 1:
                raise UsageError("%synapse lake compact: name at most one lake, e.g. %synapse lake compact /team-lake")
            from ...history.lake_care import compact

            return compact(_target(state, args[0] if args else None))
        if action == "expire":
            return _expire(state, args)
        if action == "migrate":
            if len(args) != 2:
                raise UsageError("%synapse lake migrate: name the old Parquet lake folder and the new lake, e.g. "
                                 "%synapse lake migrate /shared/lake /shared/team-lake")
            from ...history.lake_migrate import migrate_lake

            return migrate_lake(args[0], args[1])
    except SynapseError as exc:
        raise usage_error(exc) from None
    raise UsageError(f"%synapse lake: unknown action {action!r}; {LAKE_USAGE}")


def _expire(state: SynapseState, args: list[str]) -> object:
    from ...history.lake_care import EXPIRE_AFTER, expire

    age = EXPIRE_AFTER
    if "--older-than" in args:
        at = args.index("--older-than")
        value = args[at + 1] if at + 1 < len(args) else ""
        m = _AGE.match(value)
        if m is None:
            raise UsageError(f"%synapse lake expire: --older-than takes an age like 7d, 12h, 30m or 0s, not {value!r}")
        age = dt.timedelta(seconds=float(m["n"]) * _UNIT[m["unit"]])
        args = args[:at] + args[at + 2:]
    if len(args) > 1 or any(a.startswith("--") for a in args):
        raise UsageError("%synapse lake expire: usage: %synapse lake expire [LAKE] [--older-than 7d]")
    return expire(_target(state, args[0] if args else None), older_than=age)


def _target(state: SynapseState, given: str | None) -> str | LakeSpec:
    """The lake named, else the one `publish_to` publishes to, else SYNAPSE_LAKE (checked: UsageError)."""
    from ...history.lake_spec import lake_spec

    if given:
        return given
    if state.lake_publisher is not None:
        return state.lake_publisher.dest
    try:
        return lake_spec(None)
    except SynapseError as exc:
        raise usage_error(exc) from None


def split_lake(text: str, usage: str) -> tuple[str | None, str]:
    """`--lake LAKE rest` -> (LAKE, rest); text without the option -> (None, text). LAKE may be quoted."""
    stripped = text.strip()
    if not stripped.startswith("--lake"):
        return None, text
    m = _LAKE.match(stripped)
    if m is None:
        raise UsageError(f"{usage}: --lake needs a lake, e.g. {usage} --lake /shared/lake SELECT 1")
    return m["dq"] if m["dq"] is not None else m["sq"] if m["sq"] is not None else m["bare"], m["rest"] or ""


def sql(lake_target: str, query: str) -> pd.DataFrame:
    """`%synapse sql --lake LAKE QUERY`: any SQL over everyone's history published to LAKE."""
    if not query.strip():
        raise UsageError("%synapse sql --lake: missing query, e.g. %synapse sql --lake LAKE SELECT * FROM tool_calls")
    from ...history.lake_spec import is_lake_target

    if not is_lake_target(lake_target):
        raise UsageError(
            f"%synapse sql --lake: {Path(lake_target).expanduser()} is not a lake (a folder, s3://..., a catalog "
            f"URI or a lake config .json); publish into one first: %synapse publish LAKE"
        )
    from ...history.lake_reader import Lake

    try:
        with Lake(lake_target) as team:
            frame: pd.DataFrame = team.sql(query)
    except SynapseError as exc:
        raise usage_error(exc) from None
    return frame
