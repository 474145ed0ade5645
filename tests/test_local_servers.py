"""tests/support/local_servers.py: a wait for a started process is bounded by the CPU the process used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.local_servers import free_port, stop, wait_listening, wait_started

pytestmark = pytest.mark.process

LISTENS_LATE = """
import socket, sys, time
time.sleep(1)  # no CPU used meanwhile: however long this takes on a busy machine, the bound is not spent
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
sys.stdin.read()
"""


def test_a_process_that_spins_without_getting_ready_is_given_up_on_after_its_cpu() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert not wait_started(proc, lambda: False, cpu=0.5, last_resort=600)
        assert proc.poll() is None  # given up on while still running: by its CPU, not its exit
    finally:
        stop(proc, timeout=10)


def test_a_process_that_waits_before_listening_is_waited_for() -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", LISTENS_LATE, str(port)], stdin=subprocess.PIPE)
    try:
        assert wait_listening(proc, port, cpu=30)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        stop(proc, timeout=10)


def test_a_process_that_ended_is_not_waited_for() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(30)
    assert not wait_started(proc, lambda: False, cpu=600, last_resort=600)
