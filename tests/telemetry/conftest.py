"""Fixtures for the tracing tests: tracing into the SDK's in-memory exporter (trace_helpers.Traced)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.telemetry.trace_helpers import Traced


@pytest.fixture
def traced() -> Iterator[Traced]:
    t = Traced()
    yield t
    t.tracing.close()


@pytest.fixture
def traced_content() -> Iterator[Traced]:
    t = Traced(content=True, secrets=("planted-secret-value-42",))
    yield t
    t.tracing.close()
