"""A bounded local spool for audit records the database could not take.

One JSONL file per process in ``<state_dir>/audit-spool/``, held under an
exclusive ``flock`` for the life of the process. Each record is appended in
one ``write`` and ``fsync``-ed before :meth:`Spool.append` returns: a spooled
record is as durable as a committed one, on this machine's disk. Records
carry their id, so a record spooled after the database did commit it (the
acknowledgement was lost) is inserted once on drain (``ON CONFLICT DO
NOTHING``), and a crash between the drain's commit and the truncate costs a
duplicate attempt, never a duplicate row.

A spool left behind by a process that died is picked up by the next process
that can lock it (:func:`orphans`). It is read whole, so with a bound
(:data:`MAX_SPOOL_BYTES`), and only a regular file in the spool folder: a link
or device in its place is skipped (P-REL-13).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from cartograph.fsutil import make_private_dirs, read_bounded

SPOOL_DIR: Final = "audit-spool"
MAX_SPOOL_BYTES: Final = 256 * 1024 * 1024
"""A spool file read back whole: 100k records of 2.5 KB (``spool_records`` defaults lower)."""


def spool_dir(state_dir: Path) -> Path:
    return state_dir / SPOOL_DIR


class Spool:
    """This process's spool file: append (durable), read all, clear."""

    def __init__(self, folder: Path, capacity: int) -> None:
        self.capacity = capacity
        # Unique per sink: two sinks of one process must not wait on each other's lock.
        self.path = folder / f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        self._fd: int | None = None
        self.count = 0

    @property
    def full(self) -> bool:
        return self.count >= self.capacity

    def append(self, data: dict[str, Any]) -> None:
        fd = self._open()
        os.write(fd, (json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n").encode())
        os.fsync(fd)
        self.count += 1

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.path) if self.count else []

    def clear(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.fsync(self._fd)
        self.count = 0

    def _open(self) -> int:
        if self._fd is None:
            make_private_dirs(self.path.parent)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._fd = fd
        return self._fd

    def close(self) -> None:
        """Keep a non-empty file for the next process; remove an empty one."""
        if self._fd is None:
            return
        if self.count == 0:
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self._fd)
        self._fd = None


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every complete line; a line cut by a crash mid-append was never acknowledged.

    Raises :class:`~cartograph.errors.StateFileError` for a file over
    :data:`MAX_SPOOL_BYTES` (the caller leaves it on disk and logs the code).
    """
    out: list[dict[str, Any]] = []
    data = read_bounded(path, MAX_SPOOL_BYTES, inside=path.parent)
    for line in data.decode("utf-8").splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


@contextlib.contextmanager
def orphans(folder: Path, own: Path) -> Iterator[list[Path]]:
    """Spool files of processes that are gone (their lock is free), locked while in use."""
    held: list[tuple[Path, int]] = []
    try:
        for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
            if path == own:
                continue
            try:  # never through a link, never blocking on a FIFO
                fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            held.append((path, fd))
        yield [path for path, _ in held]
    finally:
        for _, fd in held:
            os.close(fd)
