"""`history(PATH_OR_LAKE)`: a history file's History, or a lake's read-only Lake with the same methods.

Apart from reader.py, because the Lake (lake_reader.py) is a History: the reader never imports the lake.
"""

from __future__ import annotations

from pathlib import Path

from .lake_spec import LakeSpec, is_lake_target
from .reader import History

__all__ = ["history"]


def history(path: str | Path | LakeSpec | None = None) -> History:
    """The recorded history in `path` (default: the file `SYNAPSE_DB` names, see config.history_path).

    A lake (a folder, an s3:// warehouse, a catalog URI or a lake config .json: see lake_spec.py) opens
    read-only as a `Lake`, with the same methods; any other path is a history file.
    """
    if path is not None and (isinstance(path, LakeSpec) or is_lake_target(path)):
        from .lake_reader import Lake  # pyiceberg and the catalog load only for a lake

        return Lake(path)
    return History(path)
