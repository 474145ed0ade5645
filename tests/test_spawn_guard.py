"""`make quick`'s promise kept by tests/support/spawn_guard.py: under --forbid-spawn, a test that starts a process
fails, however it starts it and even when the code under test swallows the error; --spawn-report lists them."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

STARTS = '''
import asyncio, os, subprocess, sys, threading
import pytest

def test_in_process():
    assert sum(range(4)) == 6

def test_subprocess_run():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_swallowed():
    try:
        subprocess.Popen(["true"])
    except Exception:
        pass  # a library that turns the failure into a "problem" line

def test_asyncio_subprocess():
    async def main():
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
        await proc.wait()
    asyncio.run(main())

def test_from_a_thread():
    errors = []
    def start():
        try:
            subprocess.run(["true"])
        except Exception as exc:
            errors.append(exc)
    t = threading.Thread(target=start)
    t.start()
    t.join()

def test_os_system():
    os.system("true")

def test_finding_a_shared_library():
    import ctypes.util
    ctypes.util._findSoname_ldconfig("c")  # runs `ldconfig -p`: a probe of the library, allowed

@pytest.fixture
def server():
    return subprocess.Popen(["sleep", "0"])

def test_through_a_fixture(server):
    pass
'''
SPAWNING = ["subprocess_run", "swallowed", "asyncio_subprocess", "from_a_thread", "os_system", "through_a_fixture"]


def test_forbid_spawn_fails_every_test_that_starts_a_process(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_starts=STARTS)
    result = pytester.runpytest_inprocess("-p", "tests.support.spawn_guard", "--forbid-spawn", "-p", "no:cacheprovider")
    outcomes = {r.nodeid.split("::")[1]: r.outcome for r in result.reprec.getreports("pytest_runtest_logreport")
                if r.when == "call" or r.failed}  # type: ignore[attr-defined]
    assert outcomes == {"test_in_process": "passed", "test_finding_a_shared_library": "passed",
                        **{f"test_{name}": "failed" for name in SPAWNING}}
    result.stdout.fnmatch_lines(["*started a process*mark it with one of @pytest.mark.process*"])


@pytest.mark.process  # here the inner tests really start their processes
def test_without_the_option_nothing_is_refused_and_the_report_names_the_tests(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_starts=STARTS)
    report = tmp_path / "spawns.tsv"
    result = pytester.runpytest_inprocess(
        "-p", "tests.support.spawn_guard", f"--spawn-report={report}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2 + len(SPAWNING))
    named = {line.split("\t")[0].split("::")[1] for line in report.read_text().splitlines()}
    assert named == {f"test_{name}" for name in SPAWNING}


def test_the_quick_markers_are_the_guards(repo_root: Path) -> None:
    from tests.support import spawn_guard
    makefile = (repo_root / "Makefile").read_text()
    assert f"QUICK_MARKERS := not ({spawn_guard.QUICK_DESELECT})" in makefile
    assert '-m "$(QUICK_MARKERS)" --forbid-spawn' in makefile
