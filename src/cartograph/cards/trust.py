"""The trust set: which keys may attest which servers (P-SIG-7).

A card verifies only under a key in the set, not revoked, whose server scope
matches the card's server. An empty set verifies nothing (as in sigstore).
Rotation is two keys in the set at once; retiring the old key is moving its
id to ``[[revoked]]``. Several operators federate by giving each key a scope
of server-name patterns (``fnmatch`` style).

The trust file is TOML::

    [[keys]]
    id = "<sha256 hex of the raw public key>"   # recomputed and checked on load
    public_key = "<base64 of the 32-byte Ed25519 public key>"
    servers = ["*"]                             # name patterns this key may attest
    label = "ops laptop"                        # optional, for people

    [[revoked]]
    id = "<key id>"
    reason = "laptop lost"
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cartograph import error_codes as codes
from cartograph.cards.keys import VerifyingKey
from cartograph.errors import KeyFileError, RevokedKeyError, StateFileError, UnknownKeyError
from cartograph.fsutil import PRIVATE_FILE_MODE, atomic_write_text, read_bounded

MAX_TRUST_FILE_BYTES: Final = 1024 * 1024


@dataclass(frozen=True)
class TrustedKey:
    key: VerifyingKey
    servers: tuple[str, ...] = ("*",)
    label: str = ""

    @property
    def key_id(self) -> str:
        return self.key.key_id

    def _covers(self, server: str) -> bool:
        return any(fnmatch.fnmatchcase(server, pattern) for pattern in self.servers)


@dataclass(frozen=True)
class TrustSet:
    """Verifying keys plus revocations. Look keys up with :meth:`key_for`, which raises."""

    keys: tuple[TrustedKey, ...] = ()
    revoked: frozenset[str] = frozenset()

    @classmethod
    def of(cls, *keys: VerifyingKey, servers: tuple[str, ...] = ("*",)) -> TrustSet:
        return cls(tuple(TrustedKey(k, servers) for k in keys))

    def key_for(self, key_id: str, server: str) -> VerifyingKey:
        """The key that may verify ``server``'s card, or a typed refusal."""
        if key_id in self.revoked:
            raise RevokedKeyError(
                f"card for {server!r} is signed by revoked key {key_id[:16]}…; "
                f"re-attest with `cartograph bootstrap --server {server}`",
                code=codes.REVOKED_KEY,
                server=server,
            )
        if not self.keys:
            raise UnknownKeyError(
                f"trust set is empty, so no card verifies (card for {server!r}); "
                "run `cartograph keys init` or add keys to the trust file",
                code=codes.EMPTY_TRUST_SET,
                server=server,
            )
        matches = [k for k in self.keys if k.key_id == key_id]
        if not matches:
            raise UnknownKeyError(
                f"card for {server!r} is signed by key {key_id[:16]}…, which is not trusted",
                code=codes.UNKNOWN_KEY,
                server=server,
            )
        scoped = [k for k in matches if k._covers(server)]
        if not scoped:
            raise UnknownKeyError(
                f"key {key_id[:16]}… is trusted but not for server {server!r} "
                f"(its scope: {', '.join(matches[0].servers)})",
                code=codes.KEY_OUT_OF_SCOPE,
                server=server,
            )
        return scoped[0].key

    def with_key(self, key: TrustedKey) -> TrustSet:
        others = tuple(k for k in self.keys if k.key_id != key.key_id)
        return TrustSet((*others, key), self.revoked)

    def revoke(self, key_id: str) -> TrustSet:
        return TrustSet(self.keys, self.revoked | {key_id})


def load_trust(path: Path) -> TrustSet:
    """Load a trust file; a missing file is an empty trust set (which verifies nothing)."""
    if not path.exists():
        return TrustSet()
    try:
        data = read_bounded(path, MAX_TRUST_FILE_BYTES)  # a regular file, bounded (P-REL-13)
    except StateFileError as exc:
        raise KeyFileError(f"{path}: trust file is not read: {exc}", code=codes.TRUST_FILE) from exc
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"{path}: not valid TOML: {exc}", code=codes.TRUST_FILE) from exc
    keys = tuple(_trusted_key(path, entry) for entry in _entries(path, raw, "keys"))
    revoked = frozenset(str(_field(path, e, "id")) for e in _entries(path, raw, "revoked"))
    flagged = zip(keys, _entries(path, raw, "keys"), strict=True)
    revoked |= {k.key_id for k, entry in flagged if entry.get("revoked") is True}
    return TrustSet(keys, revoked)


def _entries(path: Path, raw: dict[str, Any], name: str) -> list[dict[str, Any]]:
    entries = raw.get(name, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise KeyFileError(f"{path}: `{name}` must be an array of tables", code=codes.TRUST_FILE)
    return entries


def _field(path: Path, entry: dict[str, Any], name: str) -> Any:
    if name not in entry:
        raise KeyFileError(f"{path}: a trust entry lacks `{name}`", code=codes.TRUST_FILE)
    return entry[name]


def _trusted_key(path: Path, entry: dict[str, Any]) -> TrustedKey:
    key = VerifyingKey.from_base64(str(_field(path, entry, "public_key")))
    claimed = str(_field(path, entry, "id"))
    if claimed != key.key_id:
        raise KeyFileError(
            f"{path}: key id {claimed[:16]}… does not match its public key "
            f"(sha256 is {key.key_id[:16]}…); fix or remove the entry",
            code=codes.KEY_ID_MISMATCH,
        )
    servers = entry.get("servers", ["*"])
    if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
        raise KeyFileError(f"{path}: `servers` must be a list of patterns", code=codes.TRUST_FILE)
    return TrustedKey(key, tuple(servers), str(entry.get("label", "")))


def dump_trust(trust: TrustSet) -> str:
    lines = ["# Cartograph trust set: keys allowed to attest capability cards.", ""]
    for key in trust.keys:
        lines += [
            "[[keys]]",
            f'id = "{key.key_id}"',
            f'public_key = "{key.key.to_base64()}"',
            f"servers = [{', '.join(_toml_str(s) for s in key.servers)}]",
        ]
        if key.label:
            lines.append(f"label = {_toml_str(key.label)}")
        lines.append("")
    for key_id in sorted(trust.revoked):
        lines += ["[[revoked]]", f'id = "{key_id}"', ""]
    return "\n".join(lines)


def save_trust(trust: TrustSet, path: Path) -> None:
    atomic_write_text(path, dump_trust(trust), mode=PRIVATE_FILE_MODE)


def _toml_str(value: str) -> str:
    """A TOML basic string; non-printables become \\U escapes."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'
