"""Where the operator's key and trust set live for a config.

``cards.key`` and ``cards.trust`` in the config win; otherwise both sit in the
state directory (``keys/operator.key``, ``trust.toml``). The public half of a
key file sits beside it with a ``.pub`` suffix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from cartograph.config.model import Config

TRUST_FILE: Final = "trust.toml"
KEY_DIR: Final = "keys"
KEY_FILE: Final = "operator.key"
PUBLIC_SUFFIX: Final = ".pub"


def trust_path(config: Config) -> Path:
    """The trust set this config verifies cards against."""
    return config.cards.trust or config.state_dir / TRUST_FILE


def key_path(config: Config) -> Path:
    """The operator's private signing key for this config."""
    return config.cards.key or config.state_dir / KEY_DIR / KEY_FILE


def public_key_path(private: Path) -> Path:
    """The public half that sits beside a private key file."""
    return private.with_name(private.name + PUBLIC_SUFFIX)


__all__ = [
    "KEY_DIR",
    "KEY_FILE",
    "PUBLIC_SUFFIX",
    "TRUST_FILE",
    "key_path",
    "public_key_path",
    "trust_path",
]
