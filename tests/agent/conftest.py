"""Fixtures for the agent tests: a fake MCP tool source and an event recorder (both in agent_fakes.py)."""

from __future__ import annotations

import pytest

from tests.agent.agent_fakes import FakeSource, Recorder


@pytest.fixture
def source() -> FakeSource:
    return FakeSource()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
