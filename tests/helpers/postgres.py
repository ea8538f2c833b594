"""A real PostgreSQL server for tests and benchmarks: Debian's package, a throwaway cluster.

``initdb`` in a fresh temporary folder, ``pg_ctl start`` on a free loopback
port (no Unix socket outside that folder), password authentication for the
one superuser. ``initdb`` refuses to run as root, so as root the cluster is
created and run by the ``postgres`` account the Debian package creates (or
``nobody``). ``scripts/setup.d/60-fleet.sh`` installs the package.
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

from tests.helpers.serving import free_port

USER = "cartograph"
PASSWORD = "fleet-test-password"
PASSWORD_ENV = "CARTOGRAPH_DB_PASSWORD"


def pg_bin() -> Path | None:
    """The folder of Debian's PostgreSQL server programs (newest major version), if installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _major(path: str) -> int:
    try:
        return int(Path(path).parents[1].name)
    except ValueError:
        return 0


@dataclass
class Postgres:
    """A running cluster: where it is and how to reach it."""

    bin: Path
    data: Path
    port: int
    owner: str | None

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        prefix = ["runuser", "-u", self.owner, "--"] if self.owner else []
        subprocess.run(
            [*prefix, str(self.bin / "pg_ctl"), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data.parent} "
            "-c max_connections=200"
        )
        self._run(
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.data.parent / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def connect(self) -> object:
        import psycopg

        return psycopg.connect(self.url, password=PASSWORD, autocommit=True)


def _owner() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and no unprivileged account to run PostgreSQL as")


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """Create, start, yield, then stop and delete a cluster (see module docstring)."""
    binaries = pg_bin()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed; run scripts/setup (setup.d/60-fleet.sh)")
    owner = _owner()
    # Not under pytest's tmp_path: its root is 0700 root's, which the server account cannot enter.
    folder = Path(tempfile.mkdtemp(prefix="cartograph-pg-"))
    try:
        password_file = folder / "password"
        password_file.write_text(PASSWORD + "\n", encoding="utf-8")
        if owner is not None:
            info = pwd.getpwnam(owner)
            for path in (folder, password_file):
                os.chown(path, info.pw_uid, info.pw_gid)
        prefix = ["runuser", "-u", owner, "--"] if owner else []
        subprocess.run(
            [
                *prefix,
                str(binaries / "initdb"),
                "-D",
                str(folder / "data"),
                "-U",
                USER,
                f"--pwfile={password_file}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server = Postgres(binaries, folder / "data", free_port(), owner)
        server.start()
        try:
            yield server
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                server.stop("immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
