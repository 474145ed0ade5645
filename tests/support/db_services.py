"""PostgreSQL and Redis from Debian's packages, started by a test on a free 127.0.0.1 port in a temp dir and
stopped after it, for the reference MCP servers of a database (npm, installed by `make db-servers`).

A missing PostgreSQL or Redis means the setup is broken (`make services` installs them): the test fails and
says so, never skips. PostgreSQL refuses to run as root, so under root it runs as the `postgres` user the
Debian package creates, in a folder that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.local_servers import free_port, stop, wait_listening, wait_started
from tests.support.npm_servers import TOOLS

DB_SERVERS = TOOLS / "dbservers" / "node_modules" / "@modelcontextprotocol"
POSTGRES_SERVER = DB_SERVERS / "server-postgres" / "dist" / "index.js"
REDIS_SERVER = DB_SERVERS / "server-redis" / "dist" / "index.js"

READER_PASSWORD = "readerpw"
"""The password of the `reader` role, planted in the command line the tests connect with."""
START_TIMEOUT = 60.0  # generous: the machine may be shared with CPU-heavy jobs


@dataclass(frozen=True)
class Postgres:
    """A running PostgreSQL: `url` is the reader's connection URL (with its password), database `shop`."""

    port: int

    @property
    def url(self) -> str:
        return f"postgresql://reader:{READER_PASSWORD}@127.0.0.1:{self.port}/shop"


@dataclass(frozen=True)
class Redis:
    """A running Redis: `url` is its redis:// URL."""

    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        pytest.fail(f"PostgreSQL's {name} is missing (Debian package postgresql): run `make services`")
    return found[-1]


def _as_postgres() -> tuple[pwd.struct_passwd | None, dict[str, object]]:
    """Who runs PostgreSQL: the `postgres` user when we are root (it refuses root), else ourselves."""
    if os.geteuid() != 0:
        return None, {}
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("no `postgres` user to run PostgreSQL as (Debian package postgresql): run `make services`")
    return user, {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@contextlib.contextmanager
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL with a database `shop` (table `orders`, three rows) readable by role `reader` whose
    password is `READER_PASSWORD`; stopped and its folder removed after."""
    user, run_as = _as_postgres()
    home = Path(tempfile.mkdtemp(prefix="synapse-pg-"))
    try:
        if user is not None:
            os.chown(home, user.pw_uid, user.pw_gid)
        data, sockets = home / "data", home
        env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        subprocess.run([_pg_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust",
                        "--auth-host=scram-sha-256", "--no-sync"], check=True, capture_output=True, env=env,
                       cwd=home, **run_as)  # type: ignore[call-overload]
        port = free_port()
        proc = subprocess.Popen(
            [_pg_bin("postgres"), "-D", str(data), "-p", str(port), "-k", str(sockets),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=home, **run_as)  # type: ignore[call-overload]
        try:
            if not wait_listening(proc, port, START_TIMEOUT):
                pytest.fail(f"PostgreSQL did not start: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
            # it listens before it accepts logins ("the database system is starting up", psql's exit 2 on a busy
            # machine): wait until pg_isready says it accepts them, on the socket psql uses
            ready = [_pg_bin("pg_isready"), "-q", "-h", str(sockets), "-p", str(port), "-U", "postgres"]
            if not wait_started(proc, lambda: subprocess.run(ready, env=env).returncode == 0, START_TIMEOUT):
                pytest.fail(f"PostgreSQL did not accept logins: "
                            f"{proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
            psql = [_pg_bin("psql"), "-h", str(sockets), "-p", str(port), "-U", "postgres", "-v", "ON_ERROR_STOP=1",
                    "-q"]
            subprocess.run([*psql, "-c", f"CREATE ROLE reader LOGIN PASSWORD '{READER_PASSWORD}'",
                            "-c", "CREATE DATABASE shop OWNER reader"], check=True, capture_output=True, env=env)
            subprocess.run([*psql, "-d", "shop", "-c",
                            "CREATE TABLE orders (id int PRIMARY KEY, customer text, total numeric);"
                            "INSERT INTO orders VALUES (1, 'ada', 12.5), (2, 'grace', 40), (3, 'alan', 7.25);"
                            "GRANT SELECT ON orders TO reader;"], check=True, capture_output=True, env=env)
            yield Postgres(port)
        finally:
            stop(proc, timeout=10)
            if proc.stderr:
                proc.stderr.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def redis() -> Iterator[Redis]:
    """A Redis with nothing saved to disk; stopped and its folder removed after."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is missing (Debian package redis-server): run `make services`")
    home = Path(tempfile.mkdtemp(prefix="synapse-redis-"))
    port = free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(home)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(proc, port, START_TIMEOUT):
            pytest.fail("redis-server did not start")
        yield Redis(port)
    finally:
        stop(proc, timeout=10)
        shutil.rmtree(home, ignore_errors=True)
