"""Bounded reads of config files (P-REL-5).

``stat().st_size`` cannot be trusted: ``/dev/zero`` or a FIFO reports 0 and
then never ends. So we refuse anything that is not a regular file and read
at most ``limit + 1`` bytes whatever the size claims.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cartograph import error_codes as codes
from cartograph.errors import ConfigError


def read_bounded(path: Path, limit: int, *, hint: str) -> bytes:
    """The bytes of ``path``, or a ConfigError (``config_missing`` / ``config_too_large``)."""
    try:
        with path.open("rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ConfigError(
                    f"{path}: not a regular file; {hint}", code=codes.CONFIG_MISSING, file=str(path)
                )
            data = handle.read(limit + 1)
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read ({exc.strerror}); {hint}",
            code=codes.CONFIG_MISSING,
            file=str(path),
        ) from None
    if len(data) > limit:
        raise ConfigError(
            f"{path}: over the {limit} byte limit for a config file",
            code=codes.CONFIG_TOO_LARGE,
            file=str(path),
        )
    return data
