"""Fixtures the browser tests share: one Chromium per module (for the module's own `lab`) and the local LLM
wire server a module's JupyterLab points its model at (browser_lab.model_env)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_lab import Lab, open_browser
from tests.support.llm_server import LlmServer


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmServer]:
    with LlmServer() as server:
        yield server


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    """Chromium for the module, opened after the module's `lab` and closed before it."""
    with open_browser() as browser:
        yield browser
