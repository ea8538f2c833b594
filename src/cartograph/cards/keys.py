"""Ed25519 operator keys: generation, key ids, and key files (P-SIG-6).

The key id is the SHA-256 of the raw 32-byte public key, and it is always
*recomputed* from the key material — a key id written next to a key is only a
claim to check. Private keys live in PKCS#8 PEM files created 0600; a private
key file that group or world can read is refused, as ssh does. Public key
files hold only public material: one refusing to load if it carries a private
key keeps an operator from publishing the wrong file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from cartograph import error_codes as codes
from cartograph.errors import KeyFileError, SignatureError
from cartograph.fsutil import atomic_write_bytes, make_private_dirs

PRIVATE_KEY_MODE: Final = 0o600
PUBLIC_KEY_MODE: Final = 0o600  # P-FS-1: key files 0600; its owner can copy it anywhere
MAX_KEY_FILE_BYTES: Final = 16 * 1024
RAW_PUBLIC_KEY_BYTES: Final = 32
PRIVATE_MARKERS: Final = (b"PRIVATE KEY", b"private_key", b'"d"')


def key_id_for(raw_public_key: bytes) -> str:
    """SHA-256 (hex) of the raw public key: the only way a key id is ever made."""
    return hashlib.sha256(raw_public_key).hexdigest()


@dataclass(frozen=True)
class VerifyingKey:
    """A public key and the id recomputed from it."""

    raw: bytes
    key_id: str = field(init=False)

    def __post_init__(self) -> None:
        if len(self.raw) != RAW_PUBLIC_KEY_BYTES:
            raise KeyFileError(
                f"an Ed25519 public key is {RAW_PUBLIC_KEY_BYTES} bytes, got {len(self.raw)}",
                code=codes.KEY_MALFORMED,
            )
        object.__setattr__(self, "key_id", key_id_for(self.raw))

    @classmethod
    def from_base64(cls, text: str) -> VerifyingKey:
        try:
            raw = base64.b64decode(text.strip(), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KeyFileError("public key is not valid base64", code=codes.KEY_MALFORMED) from exc
        return cls(raw)

    def to_base64(self) -> str:
        return base64.b64encode(self.raw).decode("ascii")

    def verify(self, signature: bytes, message: bytes) -> None:
        """Raise :class:`SignatureError` unless ``signature`` is this key's over ``message``."""
        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
        except InvalidSignature as exc:
            raise SignatureError(
                f"signature does not verify under key {self.key_id[:16]}…",
                code=codes.BAD_SIGNATURE,
            ) from exc


class SigningKey:
    """An operator's private key. Never serialised except by :func:`write_private_key`."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        raw = private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.public = VerifyingKey(raw)

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate())

    @property
    def key_id(self) -> str:
        return self.public.key_id

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)

    def __repr__(self) -> str:
        return f"SigningKey(key_id={self.key_id[:16]}…)"


def write_private_key(key: SigningKey, path: Path) -> None:
    """Write the private key as PKCS#8 PEM, mode 0600, atomically."""
    pem = key._private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    atomic_write_bytes(path, pem, mode=PRIVATE_KEY_MODE)


def write_public_key(key: VerifyingKey, path: Path) -> None:
    """Write only public material: a comment with the key id, then base64 raw key."""
    text = f"# cartograph ed25519 public key, id {key.key_id}\n{key.to_base64()}\n"
    atomic_write_bytes(path, text.encode("ascii"), mode=PUBLIC_KEY_MODE)


def load_private_key(path: Path) -> SigningKey:
    """Load a private key, refusing files that group or world can read."""
    data = _read_key_file(path, "private")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise KeyFileError(
            f"{path}: private key is readable by group/world (mode {mode:04o}); "
            f"run `chmod 600 {path}`",
            code=codes.KEY_PERMISSIONS,
        )
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path}: not a PEM private key", code=codes.KEY_MALFORMED) from exc
    if not isinstance(private, Ed25519PrivateKey):
        raise KeyFileError(f"{path}: not an Ed25519 key", code=codes.KEY_MALFORMED)
    return SigningKey(private)


def load_public_key(path: Path) -> VerifyingKey:
    """Load a public key file; refuse one that holds any private material."""
    data = _read_key_file(path, "public")
    if any(marker in data for marker in PRIVATE_MARKERS):
        raise KeyFileError(
            f"{path}: a public key file must not contain private key material",
            code=codes.KEY_PRIVATE_MATERIAL,
        )
    lines = [ln.strip() for ln in data.decode("ascii", "replace").splitlines()]
    body = [ln for ln in lines if ln and not ln.startswith("#")]
    if len(body) != 1:
        raise KeyFileError(f"{path}: expected one base64 key line", code=codes.KEY_MALFORMED)
    return VerifyingKey.from_base64(body[0])


def _read_key_file(path: Path, kind: str) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_KEY_FILE_BYTES:
            raise KeyFileError(f"{path}: {kind} key file is too large", code=codes.KEY_MALFORMED)
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise KeyFileError(
            f"{path}: {kind} key file not found; run `cartograph keys init`",
            code=codes.KEY_MISSING,
        ) from exc
    except OSError as exc:
        raise KeyFileError(
            f"{path}: cannot read {kind} key ({exc.strerror})", code=codes.KEY_IO
        ) from exc


def ensure_private_dir(path: Path) -> None:
    """Create the key's folder 0700 so the temp file of an atomic write is never exposed."""
    make_private_dirs(path.parent)
    os.chmod(path.parent, 0o700)
