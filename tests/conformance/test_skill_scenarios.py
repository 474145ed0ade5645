"""The conformance suite's four SEP-2640 client scenarios against our client, with their checks exercised: each
must pass with at least one check that passed (before the client asked for skills they passed with zero checks,
which proves nothing). Runs the pinned suite that `make conformance-tools` installs; a missing one fails the test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conformance.test_runner import REPO, script

TOOLS = REPO / ".tools" / "conformance"
SCENARIOS = ("sep-2640-client-no-prefetch", "sep-2640-client-verify-digest", "sep-2640-client-verify-size",
             "sep-2640-client-verify-frontmatter")


@pytest.mark.node
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_skill_scenario_passes_with_its_checks_exercised(scenario: str, tmp_path: Path) -> None:
    runner = script("run_conformance")
    bin_dir = TOOLS / "node_modules" / ".bin"
    if not (bin_dir / "conformance").exists():
        pytest.fail(f"the conformance suite is not installed under {TOOLS}: run `make conformance-tools`")
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir.resolve()}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    outcome = runner.run(scenario, env, tmp_path)
    assert outcome.passed, outcome.first_failure
    assert outcome.checks_failed == 0
    assert outcome.checks_passed > 0, f"{scenario} passed without exercising a check: the client never asked"
