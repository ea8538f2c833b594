"""Atomic file writes: a crash mid-write leaves the previous version intact.

Cards, keys, the embedding cache and client configs all go through here
(promise P-REL-9): write to a temporary file in the same directory, fsync,
then ``os.replace`` over the target, which POSIX makes atomic.

Private files (mode without group/world bits: cards, keys, trust, caches in the
state directory) get their missing parent folders created 0700, and their own
mode set with ``fchmod``, so neither depends on the umask (P-FS-1): under
``umask 000`` a plain ``mkdir`` makes 0777 folders anyone could write into.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Final

PRIVATE_FILE_MODE: Final = 0o600
PRIVATE_DIR_MODE: Final = 0o700


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and any missing parents 0700 whatever the umask.

    Only folders created here are chmodded: an existing parent (a home folder)
    is the user's business.
    """
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_DIR_MODE)
            os.chmod(folder, PRIVATE_DIR_MODE)  # mkdir's mode is masked by the umask


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically, creating parent folders.

    A private ``mode`` (no group/world bits) creates missing folders 0700.
    """
    if mode & 0o077:
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        make_private_dirs(path.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def _fsync_dir(directory: Path) -> None:
    """Persist the rename itself; best effort on filesystems that refuse it."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
