"""The layout of a history lake directory: its marker file, partition folders and part-file names (no DuckDB here).

    DEST/_lake.json                                   {"format": "synapse_nb-lake", "version": 1, "lake_id": ...}
    DEST/relation=tool_calls/date=2026-11-23/part-<source>-<from>-<to>.parquet
    DEST/relation=tool_calls/date=2026-11-23/.part-<source>-<from>-<to>.<random>.tmp   (being written)

`<source>` is the id of the history file the rows come from and `(<from>, <to>]` the range of its
`_seq` numbers in the file, so a name says exactly which rows it holds, whoever writes it: that is what
makes a retried publish rewrite the same names instead of adding copies (see lake.py). Files being
written have a dotted `.tmp` name that no reader's `*.parquet` glob matches (and pyarrow and Spark skip
dotted names), and are renamed into place whole. The marker is created once, by whichever publisher
comes first (hard link: never overwritten), and gives the lake an id that survives moving or mounting
it elsewhere: watermarks are kept per lake id.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..errors import HistoryError

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MARKER",
    "LakeInfo",
    "ensure_lake",
    "fsync_dir",
    "is_lake",
    "parse_part",
    "part_name",
    "read_lake",
    "relation_dir",
    "relation_files",
    "tmp_name",
]

MARKER = "_lake.json"
FORMAT = "synapse_nb-lake"
FORMAT_VERSION = 1  # the directory layout; the history schema of each file is its `_schema` column

_PART = re.compile(r"^part-(?P<source>[0-9a-f]+)-(?P<lo>\d+)-(?P<hi>\d+)\.parquet$")


@dataclass(frozen=True, slots=True)
class LakeInfo:
    """A lake directory and the id in its marker."""

    path: Path
    lake_id: str


def relation_dir(dest: Path, relation: str) -> Path:
    return dest / f"relation={relation}"


def part_name(source: str, lo: int, hi: int) -> str:
    """The file of rows `lo < _seq <= hi` of history file `source` (one per date folder)."""
    return f"part-{source}-{lo}-{hi}.parquet"


def tmp_name(source: str, lo: int, hi: int) -> str:
    """A private name to write that file under, in the same folder, before renaming it into place."""
    return f".part-{source}-{lo}-{hi}.{uuid.uuid4().hex[:12]}.tmp"


def relation_files(dest: Path, relation: str) -> list[Path]:
    """The complete part files of `relation` (any `*.parquet` under its date folders)."""
    base = relation_dir(dest, relation)
    try:
        with os.scandir(base) as entries:
            dates = sorted(e.path for e in entries if e.is_dir() and not e.name.startswith((".", "_")))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found: list[Path] = []
    for d in dates:
        with contextlib.suppress(FileNotFoundError), os.scandir(d) as entries:
            found.extend(Path(e.path) for e in entries if e.name.endswith(".parquet") and not e.name.startswith("."))
    return sorted(found)


def is_lake(path: Path) -> bool:
    """A directory with a lake marker, or with `relation=` folders (written by another tool)."""
    if not path.is_dir():
        return False
    if (path / MARKER).is_file():
        return True
    try:
        with os.scandir(path) as entries:
            return any(e.name.startswith("relation=") and e.is_dir() for e in entries)
    except OSError:
        return False


def read_lake(path: Path) -> LakeInfo:
    """The lake at `path`; HistoryError when its marker is unreadable or of a newer layout."""
    marker = path / MARKER
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return LakeInfo(path, "")
    except (OSError, ValueError) as exc:
        raise HistoryError(f"lake marker {marker} cannot be read ({exc}): fix or remove it", path=str(marker)) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("lake_id"), str):
        raise HistoryError(f"{marker} is not a synapse_nb lake marker: publish to another directory", path=str(path))
    version = data.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise HistoryError(
            f"lake {path} has layout version {version}, newer than the {FORMAT_VERSION} this synapse_nb knows: "
            "upgrade synapse_nb",
            path=str(path),
        )
    return LakeInfo(path, data["lake_id"])


def ensure_lake(path: Path) -> LakeInfo:
    """Create the lake directory and its marker if need be (safe when many publishers race); its LakeInfo."""
    if path.exists() and not path.is_dir():
        raise HistoryError(f"cannot publish to {path}: it is a file; name a directory", path=str(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
        info = read_lake(path)
        if info.lake_id:
            return info
        # Dotted names are other publishers' markers being written, or the user's hidden files.
        if any(not p.name.startswith(".") for p in path.iterdir()) and not is_lake(path):
            raise HistoryError(
                f"cannot publish to {path}: it holds other files; name an empty directory or an existing lake",
                path=str(path),
            )
        _create_marker(path)
    except OSError as exc:
        raise HistoryError(f"cannot publish to {path} ({exc.strerror or exc}): name a writable directory",
                           path=str(path)) from exc
    return read_lake(path)


def _create_marker(path: Path) -> None:
    """Write the marker whole under a private name, then link it into place; the first publisher's wins."""
    marker = path / MARKER
    body = json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "lake_id": uuid.uuid4().hex}) + "\n"
    tmp = path / f".{MARKER}.{uuid.uuid4().hex[:12]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, body.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, marker)  # fails if another publisher's marker is there: never overwritten
    except FileExistsError:
        pass
    except OSError:  # no hard links here (some SMB / FUSE mounts): the rename may replace a racer's marker
        if not marker.exists():
            os.replace(tmp, marker)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path)


def fsync_dir(path: Path) -> None:
    """Make renames and new names in `path` durable (a no-op where directories cannot be synced)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def parse_part(name: str) -> tuple[str, int, int] | None:
    """(source, from, to) of a part file name, or None."""
    m = _PART.match(name)
    return (m["source"], int(m["lo"]), int(m["hi"])) if m else None
