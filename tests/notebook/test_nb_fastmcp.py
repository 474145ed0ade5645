"""A fastmcp (PyPI) server that asks the user before it deletes (`await ctx.elicit(...)`), over stdio and HTTP:
on the 2026-07-28 connection `auto` negotiates with it, its question is unavailable and the cell says how to pin
the server; pinned to 2025-11-25 (`--protocol`, or `"protocol"` in the config file) the question reaches the user
through the kernel's input box and the answer decides."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.local_servers import free_port, stop, wait_listening

SERVER = Path(__file__).resolve().parents[1] / "support" / "fastmcp_notes.py"
FASTMCP_PYTHON = Path(__file__).resolve().parents[2] / ".tools" / "fastmcp" / "bin" / "python"
START_TIMEOUT = 60.0


def fastmcp_python() -> str:
    if not FASTMCP_PYTHON.is_file():
        pytest.fail(f"fastmcp is not installed at {FASTMCP_PYTHON}: run `make fastmcp`")
    return str(FASTMCP_PYTHON)


@pytest.fixture(scope="module")
def notes_url() -> Iterator[str]:
    """The notes server over streamable HTTP on 127.0.0.1."""
    port = free_port()
    proc = subprocess.Popen([fastmcp_python(), str(SERVER), "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(proc, port, START_TIMEOUT):
            pytest.fail("the fastmcp notes server did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc, timeout=10)


@pytest.mark.process
def test_a_question_unavailable_on_2026_07_28_says_how_to_pin_and_pinned_it_reaches_the_user(ip: Any) -> None:
    command = f"-- {fastmcp_python()} {SERVER}"
    ip.line("mcp", f"connect notes {command}")
    assert ip.state.hub.server("notes").protocol == "2026-07-28 stateless"
    refused = ip.line("mcp", "call notes.delete_note name=todo")
    assert "unavailable on 2026-07-28" in refused.text
    hint = "notes cannot do this on protocol 2026-07-28; pin it to 2025-11-25: %mcp connect notes --protocol 2025-11-25"
    assert hint in repr(refused)
    assert hint in refused._repr_mimebundle_()["text/html"]

    ip.line("mcp", f"connect notes --protocol 2025-11-25 {command}")
    listing = ip.line("mcp", "list")
    assert listing.set_index("server").loc["notes", "protocol"] == "2025-11-25 (pinned)"
    ip.answers = ["a", "yes"]  # accept the form; its one field: yes, delete
    assert ip.line("mcp", "call notes.delete_note name=todo").text == "deleted todo"
    assert "✓ form from notes: accepted: value=True" in ip.published.text()


@pytest.mark.process
def test_a_config_entry_pins_an_http_server(ip: Any, notes_url: str, tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"servers": {"remote": {"type": "http", "url": notes_url,
                                                         "protocol": "2025-11-25"}}}))
    ip.line("mcp", f"connect --config {config}")
    assert ip.state.hub.server("remote").protocol == "2025-11-25 (pinned)"
    ip.answers = ["d"]  # decline
    assert ip.line("mcp", "call remote.delete_note name=groceries").text == "kept groceries (decline)"
    ip.answers = ["a", "yes"]
    assert ip.line("mcp", "call remote.delete_note name=groceries").text == "deleted groceries"


@pytest.mark.process
def test_a_2026_07_28_server_is_asked_for_info_logs_and_the_logs_say_what_was_asked(ip: Any, capsys: Any) -> None:
    # On 2026-07-28 a server sends log messages only when a request asks for a level; none was asked, so %mcp logs
    # said "no log messages at debug or above" while the server had logged.
    ip.line("mcp", f"connect notes -- {fastmcp_python()} {SERVER}")
    assert ip.line("mcp", "call notes.count_notes").text == "2"
    logs = ip.line("mcp", "logs notes")
    assert logs.level.tolist() == ["info"]  # info arrived; debug was not asked for
    assert '"msg": "2 notes"' in logs.message.iloc[0]  # fastmcp sends {"msg": ..., "extra": ...}
    capsys.readouterr()
    assert ip.line("mcp", "logs notes --level error") is None
    said = capsys.readouterr().out
    assert said.startswith("no log messages from notes at error or above; it was asked for info and above; ")
