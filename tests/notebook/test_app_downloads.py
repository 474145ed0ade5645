"""The files an MCP Apps View offers (`ui/download-file`, issue 36): asked, saved into the folder under a name of
their own, never over a file, refused when the user says no or the request is bad."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.notebook.apps.downloads import Downloads, safe_name
from synapse_nb.types import ContentBlock

pytestmark = pytest.mark.anyio


def embedded(uri: str, **content: Any) -> dict[str, Any]:
    return {"type": "resource", "resource": {"uri": uri, **content}}


class Asked:
    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.asked: list[tuple[str, int]] = []
        self.said: list[str] = []

    async def __call__(self, name: str, size: int) -> bool:
        self.asked.append((name, size))
        return self.answer


def files_in(folder: Path) -> list[Path]:
    return list(folder.iterdir())


async def no_read(uri: str) -> list[ContentBlock]:
    raise AssertionError(f"nothing should be read, got {uri}")


async def test_a_file_is_saved_once_agreed_and_never_over_another(tmp_path: Path) -> None:
    ask = Asked()
    downloads = Downloads(tmp_path, ask, ask.said.append)
    (tmp_path / "notes.txt").write_text("mine")
    saved, outcome = await downloads.save({"contents": [
        embedded("file:///notes.txt", mimeType="text/plain", text="hello from the view"),
        embedded("ui://app/../../data.bin", blob=base64.b64encode(b"\x00\x01").decode()),
    ]}, no_read)
    assert (saved, outcome) == (["notes (1).txt", "data.bin"], "saved")
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "notes (1).txt").read_text() == "hello from the view"
    assert (tmp_path / "data.bin").read_bytes() == b"\x00\x01"
    assert ask.asked == [("notes.txt", 19), ("data.bin", 2)]
    assert ask.said[0].startswith("saved notes (1).txt (19 bytes) in the notebook's folder")


async def test_nothing_is_written_when_the_user_says_no_or_the_request_is_bad(tmp_path: Path) -> None:
    downloads = Downloads(tmp_path, Asked(answer=False))
    assert await downloads.save({"contents": [embedded("file:///a.txt", text="x")]}, no_read) == ([], "declined")
    bad = await Downloads(tmp_path, Asked()).save({"contents": [embedded("file:///b.bin", blob="not base64!")]},
                                                   no_read)
    assert bad[0] == []
    assert "not valid base64" in bad[1]
    web = await Downloads(tmp_path, Asked()).save(
        {"contents": [{"type": "resource_link", "uri": "https://example.com/x.pdf", "name": "x.pdf"}]}, no_read)
    assert web[0] == []
    assert "on the web" in web[1]
    assert await Downloads(tmp_path, Asked()).save({"contents": []}, no_read) == ([], "failed: no file in the request")
    assert files_in(tmp_path) == []


async def test_a_link_to_the_servers_own_resource_is_read_from_it(tmp_path: Path) -> None:
    async def read(uri: str) -> list[ContentBlock]:
        assert uri == "file:///reports/q3.csv"
        return [ContentBlock(kind="text", text="a,b\n1,2\n")]

    saved, _ = await Downloads(tmp_path, Asked()).save(
        {"contents": [{"type": "resource_link", "uri": "file:///reports/q3.csv", "name": "q3.csv"}]}, read)
    assert saved == ["q3.csv"]
    assert (tmp_path / "q3.csv").read_text() == "a,b\n1,2\n"


@pytest.mark.parametrize(("uri", "name"), [
    ("file:///notes.txt", "notes.txt"),
    ("ui://app/../../etc/passwd", "passwd"),
    ("file:///.hidden", "hidden"),
    ("file:///", "download"),
    ("https://x.org/a b?.pdf", "a b"),
    ("file:///r\u00e9sum\u00e9;rm -rf.txt", "r_sum_rm -rf.txt"),
])
def test_a_files_name_is_its_last_segment_without_folders_or_odd_characters(uri: str, name: str) -> None:
    assert safe_name(uri) == name
