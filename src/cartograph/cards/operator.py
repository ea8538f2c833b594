"""The operator's own signing key: created once, then loaded.

``cartograph keys init`` and ``cartograph demo`` share this, so a demo
state directory gets exactly the key (0600 PEM in a 0700 folder, public key
beside it, key added to the trust set) an operator would make by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cartograph import error_codes as codes
from cartograph.cards.keys import (
    SigningKey,
    ensure_private_dir,
    load_private_key,
    write_private_key,
    write_public_key,
)
from cartograph.cards.paths import key_path, public_key_path, trust_path
from cartograph.cards.trust import TrustedKey, load_trust, save_trust
from cartograph.config.model import Config
from cartograph.errors import KeyFileError

OPERATOR_LABEL = "operator"


@dataclass(frozen=True)
class OperatorKey:
    """The key and where its files live; ``created`` says whether this call made it."""

    key: SigningKey
    private_key: Path
    public_key: Path
    trust: Path
    created: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "key_id": self.key.key_id,
            "created": self.created,
            "private_key": str(self.private_key),
            "public_key": str(self.public_key),
            "trust": str(self.trust),
        }


def init_operator_key(config: Config, *, force: bool = False) -> OperatorKey:
    """Create the key pair and trust it; refuse to replace a key unless ``force``."""
    private = key_path(config)
    if private.exists() and not force:
        raise KeyFileError(
            f"{private}: a key already exists; pass --force to replace it (old cards will "
            "then need re-attesting, or keep the old key in the trust set during rotation)",
            code=codes.KEY_EXISTS,
        )
    key = SigningKey.generate()
    ensure_private_dir(private)
    write_private_key(key, private)
    write_public_key(key.public, public_key_path(private))
    trust_file = trust_path(config)
    trusted = load_trust(trust_file).with_key(TrustedKey(key.public, label=OPERATOR_LABEL))
    save_trust(trusted, trust_file)
    return OperatorKey(key, private, public_key_path(private), trust_file, created=True)


def ensure_operator_key(config: Config) -> OperatorKey:
    """The existing key if there is one, else a new one (as ``keys init`` makes it).

    An existing key is never re-added to the trust set: if its owner revoked
    or removed it, verification should say so rather than be quietly healed.
    """
    private = key_path(config)
    if not private.exists():
        return init_operator_key(config)
    key = load_private_key(private)
    return OperatorKey(key, private, public_key_path(private), trust_path(config), created=False)
