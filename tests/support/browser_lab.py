"""Shared pieces of the browser tests: JupyterLab on 127.0.0.1, Debian's Chromium through Playwright, and a
notebook page that runs one cell at a time, interrupts, answers input boxes and takes screenshots.

One JupyterLab per test module (`start_lab`), one Chromium per module (`open_browser`); a notebook written
by the test (`write_notebook`) is opened with `NotebookPage.open`. Screenshots go to tests/e2e/artifacts/
(ignored by git) unless a test sets `NotebookPage.shots` to its own tmp dir. Assertions on looks read
computed styles (`css`), and `emoji_in` finds code points that need an emoji font.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import tools_server
from tests.support.local_servers import free_port, stop, wait_started

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "e2e" / "artifacts"  # beside the browser tests
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
SECRET_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OLLAMA_API_KEY", "MCP_URL", "SYNAPSE_MODEL",
               "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "DEEPSEEK_BASE_URL", "OLLAMA_BASE_URL")
START_CPU = 60.0  # seconds of CPU JupyterLab may use before it must answer (local_servers.wait_started)
KERNEL_TIMEOUT_MS = 120_000  # a kernel start on a loaded machine
CELL_TIMEOUT_MS = 60_000
CONSOLE_LINES = 20  # the page's console lines a failure message shows
# The demo server run from this checkout (the SDK starts stdio servers without PYTHONPATH; `-m` imports from
# the working directory first). `{sys.executable}` is expanded by the kernel's IPython.
DEMO = f"--cwd {REPO} -- {tools_server.COMMAND}"

# Code points shown as emoji (Unicode's Emoji_Presentation, the blocks that hold them) plus the media symbols
# the issue saw as empty boxes (⏳ ⏹ ...), the emoji variation selector and the zero-width joiner. Text
# symbols DejaVu draws (✓ ✗ ⊘ ■ ⚠ ✖ ● …) are outside these ranges.
EMOJI_RANGES = (
    (0x1F000, 0x1FAFF), (0x231A, 0x231B), (0x23E9, 0x23FA), (0x25FD, 0x25FE), (0x2614, 0x2615), (0x2648, 0x2653),
    (0x267F, 0x267F), (0x2693, 0x2693), (0x26A1, 0x26A1), (0x26AA, 0x26AB), (0x26BD, 0x26BE), (0x26C4, 0x26C5),
    (0x26CE, 0x26CE), (0x26D4, 0x26D4), (0x26EA, 0x26EA), (0x26F2, 0x26F3), (0x26F5, 0x26F5), (0x26FA, 0x26FA),
    (0x26FD, 0x26FD), (0x2705, 0x2705), (0x270A, 0x270B), (0x2728, 0x2728), (0x274C, 0x274C), (0x274E, 0x274E),
    (0x2753, 0x2755), (0x2757, 0x2757), (0x2795, 0x2797), (0x27B0, 0x27B0), (0x27BF, 0x27BF), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0xFE0F, 0xFE0F), (0x200D, 0x200D),
)


def emoji_in(text: str) -> list[str]:
    """The characters of `text` that need an emoji font (empty when there are none)."""
    return sorted({ch for ch in text if any(lo <= ord(ch) <= hi for lo, hi in EMOJI_RANGES)})


def chromium_path() -> str:
    """The system Chromium (never a downloaded one); a clear failure says how to get it."""
    path = os.environ.get("SYNAPSE_CHROMIUM", "/usr/bin/chromium")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"Chromium not found at {path}: run `make browser` (or set SYNAPSE_CHROMIUM=/path/to/chromium)")
    return path


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path
    proc: subprocess.Popen[bytes]

    def notebook_url(self, name: str) -> str:
        # a fresh workspace, so no layout from an earlier run is restored
        return f"{self.url}/lab/workspaces/e2e-{secrets.token_hex(4)}/tree/{name}?reset&token={self.token}"

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _wait_until_up(lab: Lab) -> None:
    """Poll the status endpoint (each try bounded) until it answers, the process dies, or it used START_CPU."""
    request = urllib.request.Request(f"{lab.url}/api/status", headers={"Authorization": f"token {lab.token}"})

    def up() -> bool:
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    if wait_started(lab.proc, up, START_CPU):
        return
    if lab.proc.poll() is not None:
        pytest.fail(f"JupyterLab exited with {lab.proc.returncode}:\n{lab.log_tail()}")
    pytest.fail(f"JupyterLab did not answer after {START_CPU:g} s of CPU:\n{lab.log_tail()}")


def _write_settings(settings: Path, extra: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Start the notebook's kernel without asking, never fetch news (no network beyond loopback), and keep
    every cell in the page (no windowing), so that cells can be found by their position; `extra` overrides
    or adds settings (plugin settings file -> values)."""
    values: dict[str, dict[str, Any]] = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
            "autoStartDefaultKernel": True, "windowingMode": "none",
        },
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false", "checkForUpdates": False,
        },
    }
    for rel, more in (extra or {}).items():
        values[rel] = {**values.get(rel, {}), **more}
    for rel, value in values.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


@contextmanager
def start_lab(
    base: Path, extra_env: Mapping[str, str] | None = None, settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> Iterator[Lab]:
    """JupyterLab from this venv on 127.0.0.1, a free port, a token, private config/data/runtime dirs; its
    kernels inherit the environment (PYTHONPATH too, so they import this checkout) plus `extra_env`;
    `settings` adds to the user settings _write_settings writes."""
    chromium_path()  # no browser, no point starting the server
    dirs = {name: base / name for name in ("config", "data", "runtime", "ipython", "home", "root", "settings")}
    for d in dirs.values():
        d.mkdir()
    _write_settings(dirs["settings"], settings)
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARS and not k.startswith("JUPYTER")}
    env.update(
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTER_PLATFORM_DIRS="1",
        JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
        JUPYTERLAB_WORKSPACES_DIR=str(dirs["data"] / "workspaces"),
        IPYTHONDIR=str(dirs["ipython"]),
        XDG_CONFIG_HOME=str(dirs["home"] / ".config"),
        XDG_DATA_HOME=str(dirs["home"] / ".local" / "share"),
        SYNAPSE_DB=str(base / "history.duckdb"),
        PYTHONUNBUFFERED="1",
    )
    env.pop("SYNAPSE_MCP_CONFIG", None)
    env.update(extra_env or {})
    # The kernel spec `python3` says "python": jupyter_client runs it with this very interpreter (the venv's).
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    port, token = free_port(), secrets.token_hex(16)
    log = base / "jupyterlab.log"
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={dirs['root']}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=dirs["root"], env=env, stdout=out, stderr=subprocess.STDOUT)
    lab = Lab(f"http://127.0.0.1:{port}", token, dirs["root"], log, proc)
    try:
        _wait_until_up(lab)
        yield lab
    finally:
        stop(proc, timeout=20)


def model_env(llm: Any) -> dict[str, str]:
    """The environment that points a JupyterLab's kernels at `llm` (a tests/llm_server.LlmServer) as their
    OpenAI model."""
    return {"SYNAPSE_MODEL": "openai:gpt-e2e", "OPENAI_API_KEY": "sk-e2e-not-a-real-key",
            "OPENAI_BASE_URL": llm.openai_base_url}


@contextmanager
def open_browser() -> Iterator[Any]:
    """Chromium (headless) for one module; yields the Browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def write_notebook(path: Path, cells: list[str]) -> str:
    """A notebook of these code cells (not run); returns its file name."""
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {}, "outputs": [],
             "source": src}
            for i, src in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))
    return path.name


SELECT_TRIES = 10
_SELECTED_JS = """(i) => {
  const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
  const focused = document.activeElement;
  return !!cell && cell.classList.contains('jp-mod-active') && !!focused && focused.tagName !== 'IFRAME'
    && !!focused.closest('.jp-Notebook');
}"""


class NotebookPage:
    """A notebook open in JupyterLab: run cell i, wait for it, read its outputs, interrupt, answer input."""

    def __init__(self, page: Any, name: str) -> None:
        self.page = page
        self.name = name
        self.shots = ARTIFACTS  # where `shot` writes; a test may point it at its tmp dir
        self.console: deque[str] = deque(maxlen=CONSOLE_LINES)  # the page's last warnings and errors
        page.on("console", self._heard)
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))

    def _heard(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.console.append(f"{message.type}: {message.text[:300]}")

    @classmethod
    def open(cls, browser: Any, lab: Lab, name: str, *, kernel: bool = True, height: int = 1300) -> NotebookPage:
        """Open the notebook in a new page (`height`: the viewport's, which bounds element screenshots);
        with `kernel`, wait until its kernel is up."""
        page = browser.new_page(viewport={"width": 1400, "height": height})
        page.goto(lab.notebook_url(name), timeout=60_000)
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=60_000)
        notebook = cls(page, name)
        if kernel:
            notebook.wait_idle(KERNEL_TIMEOUT_MS)
        return notebook

    def expect(self, locator: Any) -> Any:
        from playwright.sync_api import expect

        return expect(locator)

    def wait_idle(self, timeout: float = CELL_TIMEOUT_MS) -> None:
        # the status bar says "Idle" once the kernel is up (the toolbar reads "idle" even before it starts)
        self.expect(self.page.locator("#jp-main-statusbar")).to_contain_text("| Idle", timeout=timeout)

    def cell(self, i: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(i)

    def output(self, i: int) -> Any:
        """The output area of cell i."""
        return self.cell(i).locator(".jp-OutputArea").first

    def select(self, i: int) -> Any:
        """Make cell i the active cell in command mode, the keyboard's focus in the notebook. A click on its
        prompt can land elsewhere while the outputs above it change height (a widget's snapshot giving way to
        its view), and the keys then went to another cell or into a View's frame: the cell ran never."""
        cell = self.cell(i)
        for _ in range(SELECT_TRIES):  # bounded: each try is one click
            cell.locator(".jp-InputPrompt").click()
            self.page.keyboard.press("Escape")
            if self.page.evaluate(_SELECTED_JS, i):
                return cell
        pytest.fail(f"cell {i} could not be selected in {SELECT_TRIES} clicks:\n{self.state()}")

    def run(self, i: int, *, wait: bool = True, timeout: float = CELL_TIMEOUT_MS) -> Any:
        """Run cell i (select it, Ctrl+Enter: no new cell is added after the last); with `wait`, until its
        prompt shows an execution count."""
        cell = self.select(i)
        self.page.keyboard.press("Control+Enter")
        prompt = cell.locator(".jp-InputPrompt")
        if wait:
            self.wait_done(i, timeout)
        else:
            self.expect(prompt).to_have_text(re.compile(r"\[\*\]"), timeout=timeout)
        return cell

    def wait_done(self, i: int, timeout: float = CELL_TIMEOUT_MS) -> None:
        prompt = self.cell(i).locator(".jp-InputPrompt")
        try:
            self.expect(prompt).to_have_text(re.compile(r"\[\d+\]"), timeout=timeout)
        except AssertionError:
            pytest.fail(f"cell {i} did not finish in {timeout / 1000:.0f} s:\n{self.state()}")

    def interrupt(self) -> None:
        """JupyterLab's Kernel > Interrupt Kernel."""
        self.page.get_by_role("menuitem", name="Kernel", exact=True).click()
        self.page.get_by_role("menuitem", name=re.compile(r"^Interrupt Kernel")).click()

    def answer(self, i: int, text: str) -> Any:
        """Type `text` into the input box cell i shows (the kernel's stdin request) and press Enter."""
        box = self.cell(i).locator("input.jp-Stdin-input")
        box.wait_for(timeout=CELL_TIMEOUT_MS)
        box.fill(text)
        box.press("Enter")
        return box

    def shot(self, name: str, locator: Any = None) -> Path:
        """A screenshot of the page (or of one element) into `self.shots`/NAME.png (tests/e2e/artifacts/ unless
        the test chose another folder)."""
        self.shots.mkdir(parents=True, exist_ok=True)
        path = self.shots / f"{name}.png"
        if locator is None:
            self.page.screenshot(path=str(path), full_page=True)
        else:
            locator.scroll_into_view_if_needed()
            locator.screenshot(path=str(path))
        return path

    def state(self) -> str:
        """What the cells show: prompts (`[*]` = queued or running) and any error output, for a failure."""
        lines = []
        for cell in self.page.locator(".jp-Notebook .jp-CodeCell").all():
            prompt = cell.locator(".jp-InputPrompt").inner_text().strip()
            source = cell.locator(".jp-InputArea-editor").inner_text().strip().splitlines()
            lines.append(f"{prompt} {source[0] if source else ''}")
            lines += [f"    {line}" for line in error_lines(cell)[:6]]
        if self.console:
            lines += ["the page's console (last warnings and errors):", *(f"    {line}" for line in self.console)]
        return "\n".join(lines)


def css(locator: Any, prop: str) -> str:
    """The computed value of a CSS property of the element (colours come as `rgb(r, g, b)`)."""
    return str(locator.evaluate(f"(e) => getComputedStyle(e).getPropertyValue({json.dumps(prop)})"))


def rgb(hex_colour: str) -> str:
    """`#cf222e` as a computed style says it: `rgb(207, 34, 46)`."""
    h = hex_colour.lstrip("#")
    return f"rgb({int(h[0:2], 16)}, {int(h[2:4], 16)}, {int(h[4:6], 16)})"


def error_lines(cell: Any) -> list[str]:
    """The lines of the cell's error and stderr outputs (a traceback has many; a UsageError or an
    interrupted command has one)."""
    texts = cell.locator(", ".join(
        f'.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.{kind}"]' for kind in ("error", "stderr")
    )).all_inner_texts()
    return [line for text in texts for line in text.strip().splitlines() if line.strip()]


@contextmanager
def failure_shot(notebook: NotebookPage, name: str) -> Iterator[None]:
    """On any failure (pytest.fail too), keep a picture of the page as NAME-failure.png."""
    try:
        yield
    except BaseException:
        notebook.shot(f"{name}-failure")
        raise
