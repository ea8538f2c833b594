"""Atomic file writes, and bounded reads of the state directory's files.

A crash mid-write leaves the previous version intact.

Cards, keys, the embedding cache and client configs all go through here
(promise P-REL-9): write to a temporary file in the same directory, fsync,
then ``os.replace`` over the target, which POSIX makes atomic.

Private files (mode without group/world bits: cards, keys, trust, caches in the
state directory) get their missing parent folders created 0700, and their own
mode set with ``fchmod``, so neither depends on the umask (P-FS-1): under
``umask 000`` a plain ``mkdir`` makes 0777 folders anyone could write into.

Reading goes the other way (P-REL-13): every file the state directory feeds the
serving path is read through :func:`read_bounded` or :func:`open_bounded`. A
stat before the read is not enough (``/dev/zero`` and a FIFO report size 0), so
the file is opened without blocking (a FIFO), must be a regular file, and at
most ``limit + 1`` bytes are ever read. Given ``inside`` (the state directory,
or the folder of that kind of file), a path whose symlinks resolve out of it
is refused, and the resolved name is opened without following a link.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

from cartograph import error_codes as codes
from cartograph.errors import StateFileError

PRIVATE_FILE_MODE: Final = 0o600
PRIVATE_DIR_MODE: Final = 0o700
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


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


def read_bounded(path: Path, limit: int, *, inside: Path | None = None) -> bytes:
    """``path``'s bytes, refused (:class:`StateFileError`) beyond ``limit`` bytes.

    Only a regular file is read, never more than ``limit + 1`` bytes of it; with
    ``inside``, only when the path, symlinks resolved, is inside that folder. A
    missing file raises :class:`FileNotFoundError` as ``open`` does.
    """
    with open_bounded(path, limit, inside=inside) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew after the size check
        raise _too_large(path, limit)
    return data


@contextlib.contextmanager
def open_bounded(path: Path, limit: int, *, inside: Path | None = None) -> Iterator[BinaryIO]:
    """``path`` open for reading after the checks of :func:`read_bounded` (its size included).

    For a caller that reads part of a file or streams it: it must still read no
    more than ``limit`` bytes (the file may grow after the check).
    """
    fd = _open_regular(path, inside)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise _too_large(path, limit, size)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def check_bounded(path: Path, limit: int, *, inside: Path | None = None) -> None:
    """Raise as :func:`open_bounded` would, before a file is handed to a library (``np.load``)."""
    with open_bounded(path, limit, inside=inside):
        pass


def _open_regular(path: Path, inside: Path | None) -> int:
    if inside is None:
        fd = os.open(path, _READ_FLAGS & ~os.O_NOFOLLOW)
    else:  # the resolved name, opened without following: a swapped-in link fails (ELOOP)
        fd = os.open(_inside_target(path, inside), _READ_FLAGS)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _unsafe(path, "is not a regular file (a device, FIFO or folder)")
    return fd


def _inside_target(path: Path, inside: Path) -> Path:
    """``path`` with every symlink resolved, refused unless that is inside ``inside``."""
    target = path.resolve()
    if not target.is_relative_to(inside.resolve()):
        raise _unsafe(path, "is a symlink out of the state directory")
    return target


def _too_large(path: Path, limit: int, size: int | None = None) -> StateFileError:
    what = "over" if size is None else f"{size} bytes, over"
    return StateFileError(
        f"{path}: the file is {what} its {limit} byte limit; not read "
        "(remove it: Cartograph rewrites what it needs)",
        code=codes.STATE_FILE_TOO_LARGE,
        file=str(path),
    )


def _unsafe(path: Path, why: str) -> StateFileError:
    return StateFileError(
        f"{path}: {why}; not read (replace it with a regular file or remove it)",
        code=codes.STATE_FILE_UNSAFE,
        file=str(path),
    )
