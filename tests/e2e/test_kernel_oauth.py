"""Signing in to an OAuth-protected MCP server from a real kernel (tests/support/oauth_server.py on 127.0.0.1).

The test plays the browser: it GETs the "Sign in to NAME" link the cell shows; the authorization server
approves at once and redirects to the kernel's loopback listener, which the test follows (or, for a
remote kernel, the test pastes the redirect URL into the cell's input box). Each kernel has its own
HOME, data folder and history, and the keyring's fail backend, so the token store is the 0600 file and
the user's real keyring and files are never touched.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.notebook.questions.sign_in import REMOTE_VARIABLES
from tests.support.kernel_session import Execution, Kernel, kernel_env
from tests.support.oauth_server import OAuthServer, follow, nowhere, redirect_of, spawn

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

REPO = Path(__file__).resolve().parents[2]
TOKEN_FILE = "oauth_tokens.json"
LINK = re.compile(r"Sign in to (\S+): (\S+)")
CLIENT_SECRET = "planted-client-secret-5f2e9d7c41"
PLANTED = ("--client-id", "notebook-client", "--client-secret", CLIENT_SECRET, "--no-registration")
CANARY = "canary-recorded-text-8e1f3a"  # recorded like everything else, not secret: proves the scans see text




def sign_in_link(message: dict[str, Any], server: str | None = "notes") -> str | None:
    """The authorization URL of a sign-in card in an iopub message (of `server`; None: any), if it is one."""
    if message["msg_type"] not in ("display_data", "update_display_data"):
        return None
    data = message["content"]["data"]
    match = LINK.search(data.get("text/plain", ""))
    if match is None or (server is not None and match.group(1) != server):
        return None
    assert f">Sign in to {match.group(1)}</a>" in data["text/html"]
    assert 'href="' in data["text/html"]
    return match.group(2)


class Browser:
    """An iopub listener that signs in (follows the link) each time a sign-in card shows."""

    def __init__(self) -> None:
        self.links: list[str] = []
        self.finals: list[str] = []
        self.events: list[str] = []  # "card NAME" / "done NAME", in the order the cell showed them

    def __call__(self, message: dict[str, Any]) -> None:
        link = sign_in_link(message, None)
        if link is not None and message["msg_type"] == "display_data":
            card = LINK.search(message["content"]["data"]["text/plain"])
            self.events.append(f"card {card.group(1) if card else '?'}")
            self.links.append(link)
            self.finals.append(follow(link))
        done = re.match(r"✓ (\S+): signed in", message["content"].get("data", {}).get("text/plain", ""))
        if done is not None and message["msg_type"] == "update_display_data":
            self.events.append(f"done {done.group(1)}")


class Session:
    """Kernels that share one HOME, data folder and history (a restart is a new kernel on the same files);
    every iopub message of every cell is kept for the secret scan."""

    def __init__(self, tmp: Path, **extra_env: str) -> None:
        self.tmp = tmp
        (tmp / "home").mkdir(exist_ok=True)
        self.env = {k: v for k, v in kernel_env(tmp).items() if k not in REMOTE_VARIABLES}  # a local kernel
        self.env.update({"HOME": str(tmp / "home"), "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                         **extra_env})
        # this checkout first, whatever the caller's PYTHONPATH (a relative one would resolve in the kernel's cwd)
        inherited = [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p]
        self.env["PYTHONPATH"] = os.pathsep.join([str(REPO), *inherited])
        self.messages: list[dict[str, Any]] = []
        self.kernel: Kernel | None = None

    def start(self) -> Kernel:
        self.kernel = Kernel(self.tmp, self.env)
        where = self.run("import synapse_nb; print(synapse_nb.__file__)")
        assert where.stdout.strip().startswith(str(REPO)), where.stdout  # this worktree's code
        self.run("%load_ext synapse_nb")
        return self.kernel

    @contextmanager
    def started(self) -> Iterator[Kernel]:
        """A started kernel for the block, closed when the block ends, pass or fail (after any restart())."""
        try:
            yield self.start()
        finally:
            self.close()

    def restart(self) -> Kernel:
        self.close()
        return self.start()

    def close(self) -> None:
        if self.kernel is not None:
            self.kernel.close()
            self.kernel = None

    def execute(self, code: str, **kwargs: Any) -> Execution:
        assert self.kernel is not None
        run = self.kernel.execute(code, timeout=kwargs.pop("timeout", 120), **kwargs)
        self.messages += run.messages
        return run

    def run(self, code: str, **kwargs: Any) -> Execution:
        """A cell that must succeed."""
        run = self.execute(code, **kwargs)
        if run.status != "ok":
            error = run.error or {}
            raise AssertionError(f"cell failed: {error.get('ename')}: {error.get('evalue')}\n{code}")
        return run

    @property
    def token_file(self) -> Path:
        return self.tmp / "data" / "synapse" / TOKEN_FILE

    def stored_urls(self) -> list[str]:
        if not self.token_file.exists():
            return []
        return sorted(json.loads(self.token_file.read_text()))


def one_line_error(run: Execution) -> str:
    """The cell's error: one line naming what it is (`OAuthError: ...`, not `UsageError: ...`: signing in that
    did not work is no usage mistake), no traceback."""
    assert run.status == "error"
    assert run.error is not None
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in run.error["traceback"]]
    assert len(lines) == 1, lines
    assert lines[0].startswith("OAuthError: "), lines[0]
    assert not run.stderr.strip(), run.stderr
    return lines[0]


def server_rows(session: Session) -> dict[str, str]:
    """Server name -> the hub's state ("connected", "stopped", ...; `%mcp list` says it in words)."""
    run = session.run("import json as _json; from synapse_nb.notebook.extension import get_state as _gs; "
                      "print(_json.dumps({s.name: s.state for s in _gs(get_ipython()).hub.servers}))")
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def scan_for_secrets(session: Session, secrets: list[str]) -> None:
    """No secret in any iopub message, nor in any file the kernels wrote (but the token store itself)."""
    assert all(len(s) >= 10 for s in secrets), "a secret too short to scan for"
    # what the kernel published (the harness's input_reply marks stand for what the user typed: a pasted
    # redirect holds the one-time code, and the frontend echoes it as typed)
    shown = json.dumps([m["content"] for m in session.messages if m["msg_type"] != "input_reply"])
    assert CANARY in shown
    leaked = [s[:6] + "…" for s in secrets if s in shown]
    assert leaked == [], f"secrets in the kernel's output: {leaked}"
    found: dict[str, list[str]] = {}
    canary_in: list[str] = []
    for path in session.tmp.rglob("*"):
        if not path.is_file() or path == session.token_file:
            continue
        data = path.read_bytes()
        if CANARY.encode() in data:
            canary_in.append(path.name)
        for secret in secrets:
            if secret.encode() in data:
                found.setdefault(str(path.relative_to(session.tmp)), []).append(secret[:6] + "…")
    assert canary_in, "the canary reached no file: the scan would not see a leak"
    assert found == {}, f"secrets written to files: {found}"
    if session.token_file.exists():
        assert stat.S_IMODE(session.token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(session.token_file.parent.stat().st_mode) == 0o700


# ------------------------------------------------------------------------------------------------- tests


@pytest.fixture
def servers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the servers' logs, apart from the kernel's files (which are scanned)."""
    return tmp_path_factory.mktemp("servers")


def test_sign_in_restart_logout_and_auth_again(tmp_path: Path, servers: Path) -> None:
    session = Session(tmp_path)
    with spawn(servers) as server:
        with session.started():
            browser = Browser()
            run = session.run(f"%mcp connect notes {server.url}", on_message=browser)
            assert len(browser.links) == 1  # the cell showed the link; the test signed in with it
            assert browser.links[0].startswith(f"{server.origin}/authorize?")
            assert browser.finals[0].startswith("http://127.0.0.1:")
            assert "/callback?code=" in browser.finals[0]
            assert "✓ notes: signed in" in run.text()
            assert re.search(r"✓ notes: connected, 2 tools \(http\)", run.text()), run.text()
            assert server.state()["authorizations"] == 1
            assert server.state()["verifiers"] == 1  # the PKCE verifier is among the secrets scanned for
            assert session.stored_urls() == [server.url]

            assert "5" in session.run("%mcp call notes.add a=2 b=3").text()
            assert CANARY in session.run(f"%mcp call notes.echo text={CANARY}").text()

            # a restarted kernel reconnects from the stored token: no card, no new authorization
            session.restart()
            run = session.run(f"%mcp connect notes {server.url}", on_message=browser)
            assert len(browser.links) == 1
            assert "Sign in" not in run.text()
            assert "7" in session.run("%mcp call notes.add a=3 b=4").text()
            assert server.state()["authorizations"] == 1

            # logout forgets the tokens: the next connect asks to sign in again
            out = session.run("%mcp logout notes").stdout
            assert "signed out" in out
            assert session.stored_urls() == []
            assert server_rows(session).get("notes") != "connected"
            session.run(f"%mcp connect notes {server.url}", on_message=browser)
            assert len(browser.links) == 2
            assert server.state()["authorizations"] == 2

            # %mcp auth signs in again on purpose
            run = session.run("%mcp auth notes", on_message=browser)
            assert len(browser.links) == 3
            assert "✓ notes: signed in, connected, 2 tools" in run.text()
            assert server.state()["authorizations"] == 3
            assert "9" in session.run("%mcp call notes.add a=4 b=5").text()
        scan_for_secrets(session, server.state()["issued"])


def test_an_expired_access_token_is_refreshed_also_after_a_restart(tmp_path: Path, servers: Path) -> None:
    session = Session(tmp_path)
    with spawn(servers, "--access-ttl", "1") as server:
        with session.started():
            browser = Browser()
            session.run(f"%mcp connect notes {server.url}", on_message=browser)
            assert server.state()["authorizations"] == 1
            first = server.state()["refreshes"]
            _wait_expired(server)
            assert CANARY in session.run(f"%mcp call notes.echo text={CANARY}").text()
            assert server.state()["refreshes"] > first
            session.restart()
            refreshed = server.state()["refreshes"]
            _wait_expired(server)
            session.run(f"%mcp connect notes {server.url}", on_message=browser)
            assert "3" in session.run("%mcp call notes.add a=1 b=2").text()
            assert len(browser.links) == 1
            assert server.state()["authorizations"] == 1  # refreshed, not signed in again
            assert server.state()["refreshes"] > refreshed
        scan_for_secrets(session, server.state()["issued"])


def _wait_expired(server: OAuthServer, timeout: float = 30) -> None:
    """Until the server holds no live access token any more (their lifetime is 1 s)."""
    deadline = time.monotonic() + timeout
    while server.state()["live_access_tokens"]:
        assert time.monotonic() < deadline, "the access token did not expire"
        time.sleep(0.1)


def test_denied_consent_is_one_line_and_nothing_stays_connected(tmp_path: Path, servers: Path) -> None:
    session = Session(tmp_path)
    with spawn(servers, "--deny") as server, session.started():
        browser = Browser()
        run = session.execute(f"%mcp connect notes {server.url}", on_message=browser)
        assert len(browser.links) == 1
        assert "error=access_denied" in browser.finals[0]
        line = one_line_error(run)
        assert "declined" in line, line
        assert "%mcp auth notes" in line
        assert server_rows(session).get("notes") not in ("connected", "connecting")
        assert "notes" not in session.run("print(list(get_ipython().run_line_magic('mcp', 'tools').server))").stdout
        assert session.stored_urls() in ([], [server.url])
        assert server.state()["denied"] == 1


def test_pasted_redirect_signs_in_a_preregistered_client_from_a_config_file(tmp_path: Path, servers: Path) -> None:
    with spawn(servers, *PLANTED) as server:
        config = tmp_path / "mcp_servers.json"
        config.write_text(json.dumps({"mcpServers": {
            "notes": {"url": server.url, "oauth": {"client_id": "notebook-client",
                                                   "client_secret": "${env:NOTES_CLIENT_SECRET}"}},
            "demo": {"command": sys.executable, "args": ["-m", "synapse_nb.mcp_client.demo_server"]},
        }}))
        # a kernel over SSH: "auto" offers the box to paste the redirect into
        session = Session(tmp_path, NOTES_CLIENT_SECRET=CLIENT_SECRET, SSH_CONNECTION="10.0.0.1 50000 10.0.0.2 22")
        with session.started() as kernel:
            seen: list[dict[str, Any]] = []  # the cell's iopub messages so far (those paste() reads itself too)
            stolen: list[dict[str, Any]] = []
            pasted: list[str] = []

            def paste(prompt: str) -> str:
                # the card may still be on its way on iopub: read on until it is there
                deadline = time.monotonic() + 30
                link = next((lk for m in seen if (lk := sign_in_link(m))), None)
                while link is None:
                    assert time.monotonic() < deadline, "no sign-in card before the input box"
                    try:
                        message = kernel.kc.get_iopub_msg(timeout=0.5)
                    except Exception:  # queue.Empty
                        continue
                    stolen.append(message)
                    seen.append(message)
                    link = sign_in_link(message)
                pasted.append(redirect_of(link))
                return pasted[-1]

            run = session.run(f"%mcp connect --config {config}", allow_stdin=True, answer=paste,
                              on_message=seen.append)
            session.messages += stolen
            assert run.prompts
            assert run.prompts[0].startswith("paste the address your browser ended on")
            assert len(pasted) == 1
            assert "code=" in pasted[0]
            # the card's display may be among the stolen messages, its update among the cell's: look at both
            shown = [m["content"].get("data", {}).get("text/plain", "") for m in [*stolen, *run.messages]]
            assert "✓ notes: signed in" in shown
            assert re.search(r"notes: ✓ connected, 2 tools", run.text()), run.text()
            assert re.search(r"demo: ✓ connected", run.text()), run.text()
            assert server.state()["registrations"] == 0
            assert CANARY in session.run(f"%mcp call notes.echo text={CANARY}").text()
        scan_for_secrets(session, [*server.state()["issued"], CLIENT_SECRET])


def test_a_config_file_signs_in_one_server_after_the_other(tmp_path: Path, servers: Path) -> None:
    with spawn(servers) as notes, spawn(servers) as tracker:
        config = tmp_path / "mcp_servers.json"
        config.write_text(json.dumps({"mcpServers": {
            "notes": {"url": notes.url},
            "tracker": {"url": tracker.url},
            "demo": {"command": sys.executable, "args": ["-m", "synapse_nb.mcp_client.demo_server"]},
        }}))
        session = Session(tmp_path)
        with session.started():
            browser = Browser()
            run = session.run(f"%mcp connect --config {config}", on_message=browser)
            for name in ("notes", "tracker", "demo"):
                assert re.search(rf"{name}: ✓ connected", run.text()), run.text()
            assert len(browser.links) == 2
            first, second = (e.split()[1] for e in browser.events if e.startswith("card"))
            # the second card shows only once the first sign-in is done
            assert browser.events == [f"card {first}", f"done {first}", f"card {second}", f"done {second}"]
            assert {first, second} == {"notes", "tracker"}
            assert notes.state()["authorizations"] == tracker.state()["authorizations"] == 1


def test_a_wrong_client_secret_is_one_line(tmp_path: Path, servers: Path) -> None:
    with spawn(servers, *PLANTED) as server:
        config = tmp_path / "mcp_servers.json"
        config.write_text(json.dumps({"mcpServers": {
            "notes": {"url": server.url, "oauth": {"client_id": "notebook-client",
                                                   "client_secret": "wrong-secret-0a9b8c7d6e"}},
        }}))
        session = Session(tmp_path)
        with session.started():
            browser = Browser()
            run = session.run(f"%mcp connect --config {config}", on_message=browser)
            assert len(browser.links) == 1
            report = run.text()
            assert re.search(r"notes: ✗ failed: .*client", report), report
            assert len([ln for ln in report.splitlines() if ln.startswith("notes:")]) == 1
            assert server_rows(session).get("notes") not in ("connected", "connecting")
            assert "wrong-secret-0a9b8c7d6e" not in json.dumps([m["content"] for m in session.messages])


def test_an_unreachable_authorization_server_is_one_line(tmp_path: Path, servers: Path) -> None:
    dead = nowhere()
    with spawn(servers, "--issuer", dead) as server:
        session = Session(tmp_path)
        with session.started():
            run = session.execute(f"%mcp connect notes {server.url}")
            line = one_line_error(run)
            assert "notes" in line
            assert "reach" in line or "unreachable" in line, line
            assert server_rows(session).get("notes") not in ("connected", "connecting")


def test_nobody_signing_in_times_out_in_one_line(tmp_path: Path, servers: Path) -> None:
    with spawn(servers) as server:
        config = tmp_path / "mcp_servers.json"
        config.write_text(json.dumps({"mcpServers": {"notes": {"url": server.url, "oauth": {"sign_in_timeout": 1}}}}))
        session = Session(tmp_path)
        with session.started():
            run = session.run(f"%mcp connect --config {config}")
            assert re.search(r"notes: ✗ failed: .*within 1 s", run.text()), run.text()
            assert "⊘ notes: not signed in" in run.text()
            assert server_rows(session).get("notes") not in ("connected", "connecting")
            assert server.state()["authorizations"] == 0


def test_an_interrupt_cancels_the_sign_in_in_one_line(tmp_path: Path, servers: Path) -> None:
    with spawn(servers) as server:
        session = Session(tmp_path)
        with session.started() as kernel:

            sent: list[bool] = []

            def interrupt(message: dict[str, Any]) -> None:
                # once: the card is shown again when the command tidies its cell, and a second SIGINT that lands
                # after the cell's code (in ipykernel's own sleep before the reply) would lose the execute reply
                if not sent and sign_in_link(message) is not None and message["msg_type"] == "display_data":
                    sent.append(True)
                    kernel.km.interrupt_kernel()

            run = session.execute(f"%mcp connect notes {server.url}", on_message=interrupt)
            assert sent
            assert run.status == "error"
            error = run.error or {}
            assert "connecting notes was cancelled" in str(error.get("evalue")), error
            assert len(error.get("traceback", [])) <= 2
            assert "connecting notes was interrupted" in run.text()
            assert server_rows(session) == {"notes": "stopped"}
            still_open = session.run("from synapse_nb.notebook.extension import get_state; "
                                     "print(get_state(get_ipython()).sign_in.open)").stdout
            assert still_open.strip() == "[]"
            # the kernel is fine afterwards: signing in now works
            browser = Browser()
            session.run("%mcp auth notes", on_message=browser)
            assert len(browser.links) == 1



def test_an_interrupt_with_the_paste_box_open_ends_in_one_line_and_stdin_still_works(
    tmp_path: Path, servers: Path,
) -> None:
    with spawn(servers) as server:
        session = Session(tmp_path, SSH_CONNECTION="10.0.0.1 50000 10.0.0.2 22")
        with session.started() as kernel:

            def interrupt(prompt: str) -> str:
                assert prompt.startswith("paste the address your browser ended on")
                kernel.km.interrupt_kernel()
                return ""

            run = session.execute(f"%mcp connect notes {server.url}", allow_stdin=True, answer=interrupt)
            assert run.prompts
            error = run.error or {}
            assert error.get("evalue") == "connecting notes was cancelled", error
            assert server_rows(session) == {"notes": "stopped"}
            # the kernel's stdin is free again: the next question is answered as usual
            asked = session.run("print('got', input('name? '))", allow_stdin=True, answer=lambda prompt: "Ada")
            assert asked.prompts == ["name? "]
            assert asked.stdout.strip() == "got Ada"
            assert server.state()["authorizations"] == 0
