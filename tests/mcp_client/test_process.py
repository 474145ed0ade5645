"""Server process plumbing: the bounded stderr ring, the stderr pipe, finding and killing the process."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from synapse_nb.mcp_client.process import StderrPipe, StderrRing, find_child, kill_tree
from tests.mcp_client.mcp_helpers import wait_gone


def test_ring_keeps_the_last_lines_and_bounds_each_line() -> None:
    ring = StderrRing(max_lines=3, max_line=10)
    for i in range(10):
        ring.append(f"line {i}")
    ring.append("x" * 50)
    assert ring.count == 11
    assert ring.tail().splitlines() == ["line 8", "line 9", "x" * 10 + " [...]"]
    assert ring.tail(max_chars=20).splitlines() == ["x" * 10 + " [...]"]


@pytest.mark.process
def test_pipe_captures_a_child_stderr_and_reports_its_end() -> None:
    ring = StderrRing(max_lines=100)
    ended = threading.Event()
    pipe = StderrPipe(ring, "test", on_eof=ended.set)
    # the child waits for a line on stdin, so it is still there to be found (a quick one could end first)
    code = ("import sys\nsys.stdin.readline()\nfor i in range(5000): print('line', i, file=sys.stderr)\n"
            "sys.stderr.write('no newline')")
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stderr=pipe.errlog,
                            start_new_session=True)
    pipe.close_writer()
    child = find_child(pipe.inode, started)
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    assert child is not None
    assert child.pid == proc.pid
    proc.wait(30)
    assert pipe.wait_eof(10)
    assert ended.wait(10)
    assert ring.count == 5001
    lines = ring.tail(100_000).splitlines()
    assert len(lines) == 100
    assert lines[-2:] == ["line 4999", "no newline"]


@pytest.mark.process
def test_kill_tree_ends_a_process_that_ignores_sigterm() -> None:
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\n" \
           "time.sleep(60)"
    pipe = StderrPipe(StderrRing(), "stubborn")
    started = time.time()
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=pipe.errlog,
                          start_new_session=True) as proc:
        pipe.close_writer()
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        child = find_child(pipe.inode, started)
        assert child is not None
        assert child.alive()
        kill_tree(child, grace=0.2)
        assert proc.wait(10) == -signal.SIGKILL
    assert wait_gone(child.pid, 5)
    assert not child.alive()
    kill_tree(child)  # already gone: nothing to do, and a reused pid would not match its start time
