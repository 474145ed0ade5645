"""The history layer: HistoryStore (store.py) records events; History (reader.py) reads them back.

`History.publish(LAKE)` appends a history file to the team's Iceberg lake (lake.py; LAKE: a folder, an
s3:// warehouse with a catalog, a lake config .json: lake_spec.py); `history(LAKE)` returns a read-only
Lake (lake_reader.py) with the same methods.

`synapse_nb.history(path)` is the public reader function, but `synapse_nb.history` is also the name
of this package, and once any of its modules is imported Python binds that name to the package. So
the package itself is callable and forwards to `reader.history`: `synapse_nb.history()` works
whatever was imported first. Importing the package stays cheap (DuckDB loads on first use).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .lake_spec import LakeSpec
    from .reader import History, history
    from .store import HistoryStore

__all__ = ["History", "HistoryStore", "history"]


class _CallablePackage(types.ModuleType):
    def __call__(self, path: str | Path | LakeSpec | None = None) -> History:
        from .reader import history

        return history(path)


def __getattr__(name: str) -> object:
    if name in ("History", "history"):
        from . import reader

        return getattr(reader, name)
    if name == "HistoryStore":
        from .store import HistoryStore

        return HistoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


sys.modules[__name__].__class__ = _CallablePackage
