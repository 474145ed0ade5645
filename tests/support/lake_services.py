"""What a team's lake runs on, started for real on 127.0.0.1: PostgreSQL (Debian's packages) for the catalog
and moto's S3 server (PyPI, the test extra) for the warehouse. Used by the lake tests (one of each per test
file) and bench row 13c.

PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` user (made by the
Debian package) and runs under `runuser`. `make pytest` installs the package when it is missing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Postgres", "S3Server", "free_port", "postgres", "s3_server"]

START_TIMEOUT = 60.0
S3_KEY = "testing"  # moto accepts any key; these are not secrets
S3_REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: run `make postgres` (apt-get install postgresql)")
    return Path(found[-1]).parent


@dataclass
class Postgres:
    """A running PostgreSQL cluster: `uri(database)` for SQLAlchemy; `stop()` / `start()` it (the catalog
    going away and coming back)."""

    bindir: Path
    data: Path
    port: int
    as_user: list[str]

    def uri(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _ctl(self, *args: str) -> None:
        subprocess.run([*self.as_user, str(self.bindir / "pg_ctl"), "-D", str(self.data / "db"), *args],
                       check=True, capture_output=True, timeout=START_TIMEOUT)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
        self._ctl("-w", "-t", str(int(START_TIMEOUT)), "-l", str(self.data / "log"), "-o", options, "start")

    def stop(self) -> None:
        self._ctl("-m", "immediate", "-w", "stop")


@contextlib.contextmanager
def postgres() -> Iterator[Postgres]:
    """A fresh cluster in a temporary folder on a free port (trust auth, 127.0.0.1 only), removed after."""
    bindir = _bindir()
    data = Path(tempfile.mkdtemp(prefix="synapse-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data / "db"), "-U", "postgres", "--auth=trust",
                    "-E", "UTF8", "--no-sync"], check=True, capture_output=True, timeout=START_TIMEOUT)
    server = Postgres(bindir, data, free_port(), as_user)
    server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            server.stop()
        shutil.rmtree(data, ignore_errors=True)


@dataclass
class S3Server:
    """moto's S3 API on 127.0.0.1: `bucket()` makes a fresh bucket; `storage` are the FileIO properties."""

    endpoint: str

    @property
    def storage(self) -> dict[str, str]:
        # moto answers slowly while several processes and PostgreSQL share two busy cores: the AWS SDK's 3 s
        # request timeout would fail a publish that is only waiting
        return {"s3.endpoint": self.endpoint, "s3.region": S3_REGION, "s3.access-key-id": S3_KEY,
                "s3.secret-access-key": S3_KEY, "s3.request-timeout": "60", "s3.connect-timeout": "10"}

    def env(self) -> dict[str, str]:
        """The same as SYNAPSE_LAKE_S3_* variables."""
        return {"SYNAPSE_LAKE_S3_ENDPOINT": self.endpoint, "SYNAPSE_LAKE_S3_REGION": S3_REGION,
                "SYNAPSE_LAKE_S3_ACCESS_KEY_ID": S3_KEY, "SYNAPSE_LAKE_S3_SECRET_ACCESS_KEY": S3_KEY}

    def bucket(self) -> str:
        from pyarrow import fs

        name = f"lake-{uuid.uuid4().hex[:12]}"
        s3 = fs.S3FileSystem(endpoint_override=self.endpoint, access_key=S3_KEY, secret_key=S3_KEY, region=S3_REGION,
                             allow_bucket_creation=True)
        s3.create_dir(name)
        return name

    def keys(self, bucket: str) -> list[str]:
        """Every object in `bucket`."""
        from pyarrow import fs

        s3 = fs.S3FileSystem(endpoint_override=self.endpoint, access_key=S3_KEY, secret_key=S3_KEY, region=S3_REGION)
        return [i.path for i in s3.get_file_info(fs.FileSelector(bucket, recursive=True)) if i.type == fs.FileType.File]


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """`moto_server` in a process of its own (so it never competes with the test for the GIL)."""
    port = free_port()
    # its log goes to a file: a pipe nobody reads fills up after a few hundred requests and stops the server
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below, after the server
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # wait for it to accept connections (a condition polled under a deadline)
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"moto_server exited: {log.read().decode(errors='replace')[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start in time") from None
                time.sleep(0.05)
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
