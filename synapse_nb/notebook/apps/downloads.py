"""Downloads: the files a View offers with `ui/download-file`, saved into the notebook's folder once the user agreed.

A View's frame cannot download (it has no origin and no `allow-downloads`), so it hands the host the files'
contents: embedded resources (`text` or base64 `blob`) or links to its server's own resources, which the host
reads. The user is asked under the View (the file's name and size); a yes writes it beside the notebook under a
name of its own (the link's last path segment, stripped of folders; `name (1).ext` when that file exists), never
over a file already there.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...types import ContentBlock

__all__ = ["AskFile", "Downloads", "safe_name"]

AskFile = Callable[[str, int], Awaitable[bool]]
"""Asks the user whether to save a file of this name and size in bytes; True when they agreed."""
ReadOwn = Callable[[str], Awaitable[list[ContentBlock]]]
"""Reads a resource of the View's own server (a linked file's contents)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")
_MAX_BYTES = 100_000_000


def safe_name(uri: str, fallback: str = "download") -> str:
    """A file name from a resource URI or name: its last path segment, without folders, hidden dots or characters a
    file system may refuse."""
    path = urlsplit(uri).path if re.match(r"^[a-z][a-z0-9+.-]*:", uri, re.IGNORECASE) else uri
    last = path.rstrip("/").rsplit("/", 1)[-1]
    name = _UNSAFE.sub("_", last).strip(" .")
    return name[:120] or fallback


def _free(folder: Path, name: str) -> Path:
    path = folder / name
    stem, suffix = path.stem, path.suffix
    n = 1
    while path.exists():
        path = folder / f"{stem} ({n}){suffix}"
        n += 1
    return path


def _data(item: Mapping[str, Any]) -> bytes:
    if isinstance(item.get("blob"), str):
        try:
            return base64.b64decode(item["blob"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"the file {item.get('uri')!r} is not valid base64") from exc
    return str(item.get("text") or "").encode("utf-8")


class Downloads:
    """Saves a View's files into `folder` after asking `ask`; `say` shows a line for each file saved."""

    def __init__(self, folder: Path, ask: AskFile, say: Callable[[str], None] | None = None) -> None:
        self.folder = folder
        self.ask = ask
        self.say = say

    async def _files(self, params: Mapping[str, Any], read: ReadOwn) -> list[tuple[str, bytes]]:
        files: list[tuple[str, bytes]] = []
        for entry in params.get("contents") or []:
            if not isinstance(entry, Mapping):
                continue
            if entry.get("type") == "resource" and isinstance(entry.get("resource"), Mapping):
                item = entry["resource"]
                files.append((safe_name(str(item.get("uri", ""))), _data(item)))
            elif entry.get("type") == "resource_link" and isinstance(entry.get("uri"), str):
                uri = entry["uri"]
                if uri.startswith(("http:", "https:")):
                    raise ValueError(f"{uri} is on the web: the host saves only what the View or its server holds")
                blocks = await read(uri)
                data = b"".join(base64.b64decode(b.data) if b.data is not None else (b.text or "").encode("utf-8")
                                for b in blocks)
                files.append((safe_name(str(entry.get("name") or uri)), data))
        return files

    async def save(self, params: Mapping[str, Any], read: ReadOwn) -> tuple[list[str], str]:
        """The names of the files saved (empty when none) and what happened (`saved`, `declined`, or the problem)."""
        try:
            files = await self._files(params, read)
        except Exception as exc:  # a bad file or a failed read: the View is told, the kernel goes on
            return [], f"failed: {exc}"
        if not files:
            return [], "failed: no file in the request"
        if any(len(data) > _MAX_BYTES for _, data in files):
            return [], f"failed: a file is over {_MAX_BYTES // 1_000_000} MB"
        saved: list[str] = []
        for name, data in files:
            if not await self.ask(name, len(data)):
                return saved, "declined"
            path = _free(self.folder, name)
            path.write_bytes(data)
            saved.append(path.name)
            if self.say is not None:
                self.say(f"saved {path.name} ({len(data)} bytes) in the notebook's folder ({self.folder})")
        return saved, "saved"
