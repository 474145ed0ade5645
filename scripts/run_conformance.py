"""Run every client scenario of the official MCP conformance suite against scripts/conformance_client.py.

    python scripts/run_conformance.py [--tools .tools/conformance ...]
                                      [--expected tests/conformance/expected_failures.toml]

Each `--tools` folder holds one installed suite (`make conformance-tools` installs one; several run one after
the other). Prints one line per
scenario and a total per suite. Exits 1 only when a scenario fails that the expected-failures file does
not list for that suite's version (its `[client."VERSION"]` table; each entry carries its reason); a
listed scenario that passes is reported, so its entry can be removed. Each suite runs on the Node 22
that `make conformance-tools` installs next to it (the system's Node 20 lacks fs.globSync).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "scripts" / "conformance_client.py"
CLIENT_TIMEOUT = 90.0
"""Seconds the suite gives the client (its default, 30 s, is missed on a loaded machine: 2 cores, many jobs)."""
SCENARIO_TIMEOUT = 180.0
"""Seconds one scenario may take end to end."""


@dataclass(frozen=True, slots=True)
class Outcome:
    scenario: str
    passed: bool
    checks_passed: int
    checks_failed: int
    first_failure: str


def scenarios(env: dict[str, str]) -> list[str]:
    out = subprocess.run(["conformance", "list", "--client"], env=env, capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return [line.split()[1] for line in out.splitlines() if line.strip().startswith("- ")]


def run(scenario: str, env: dict[str, str], out_dir: Path) -> Outcome:
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(DRIVER))}"
    try:
        proc = subprocess.run(
            ["conformance", "client", "--command", command, "--scenario", scenario, "-o", str(out_dir),
             "--timeout", str(int(CLIENT_TIMEOUT * 1000))],
            env=env, capture_output=True, text=True, timeout=SCENARIO_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return Outcome(scenario, False, 0, 0, f"did not finish within {SCENARIO_TIMEOUT:g} s")
    checks: list[dict[str, object]] = []
    for found in out_dir.glob("**/checks.json"):  # out_dir is this scenario's alone
        checks.extend(json.loads(found.read_text(encoding="utf-8")))
    ok = sum(c.get("status") == "SUCCESS" for c in checks)
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    first = ""
    if bad:
        first = str(bad[0].get("errorMessage") or bad[0].get("description") or bad[0].get("name"))
    elif proc.returncode != 0:  # every check passed: the client failed or ran out of time (the suite says which)
        said = [line for line in proc.stdout.splitlines() if "CLIENT" in line or "imed out" in line]
        first = (said or proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1].strip()
    return Outcome(scenario, proc.returncode == 0, ok, len(bad), first.replace("\n", " ")[:160])


def load_expected(path: Path, version: str) -> dict[str, str]:
    """The expected failures of one suite version: the `[client."VERSION"]` table (none when absent)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    client = data.get("client", {}).get(version, {})
    missing = [name for name, reason in client.items() if not isinstance(reason, str) or not reason.strip()]
    if missing:
        raise SystemExit(f"{path}: every expected failure needs its reason; none for {', '.join(missing)}")
    return {str(k): str(v) for k, v in client.items()}


def suite_version(tools: Path) -> str:
    package = tools / "node_modules" / "@modelcontextprotocol" / "conformance" / "package.json"
    return str(json.loads(package.read_text(encoding="utf-8"))["version"])


def run_suite(tools: Path, expected_file: Path) -> bool:
    """Run every client scenario of the suite installed under `tools`; true when none failed unexpectedly."""
    version = suite_version(tools)
    expected = load_expected(expected_file, version)
    env = dict(os.environ)
    env["PATH"] = f"{(tools / 'node_modules' / '.bin').resolve()}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    # the runner starts once per scenario: Node compiles its bundle once and keeps the code here
    env.setdefault("NODE_COMPILE_CACHE", str((tools / ".node-compile-cache").resolve()))

    names = scenarios(env)
    unknown = sorted(set(expected) - set(names))
    counts = {"passed": 0, "expected": 0, "unexpected": 0, "stale": 0}
    print(f"conformance {version} ({tools}):")
    with tempfile.TemporaryDirectory(prefix="synapse-conformance-") as tmp:
        for i, name in enumerate(names):
            o = run(name, env, Path(tmp) / str(i))
            detail = f"{o.checks_passed} checks passed, {o.checks_failed} failed"
            if o.passed and name in expected:
                counts["stale"] += 1
                print(f"PASS   {name} ({detail}); listed as an expected failure of {version}: remove it from "
                      f"{expected_file.name}", flush=True)
            elif o.passed:
                counts["passed"] += 1
                print(f"PASS   {name} ({detail})", flush=True)
            elif name in expected:
                counts["expected"] += 1
                print(f"XFAIL  {name} ({expected[name]})", flush=True)
            else:
                counts["unexpected"] += 1
                print(f"FAIL   {name} ({detail}): {o.first_failure}", flush=True)
    for name in unknown:
        print(f"note: {expected_file.name} lists {name!r} for {version}, which that suite does not have")
    print(f"conformance {version}: {len(names)} client scenarios, {counts['passed'] + counts['stale']} passed, "
          f"{counts['expected']} expected failures, {counts['unexpected']} unexpected failures")
    return not counts["unexpected"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=Path, action="append",
                        help="a folder with an installed suite (repeat for several; default .tools/conformance)")
    parser.add_argument("--expected", type=Path, default=REPO / "tests" / "conformance" / "expected_failures.toml")
    args = parser.parse_args()
    suites: list[Path] = args.tools or [REPO / ".tools" / "conformance"]
    for tools in suites:
        bin_dir = tools / "node_modules" / ".bin"
        if not (bin_dir / "conformance").exists() or not (bin_dir / "node").exists():
            print(f"the conformance suite is not installed under {tools}: run `make conformance-tools`",
                  file=sys.stderr)
            return 2
    results = [run_suite(tools, args.expected) for tools in suites]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
