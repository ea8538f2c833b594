"""One generated stub module pinned whole: every byte a coding agent imports."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from cartograph.cards.keys import SigningKey
from cartograph.stubs import generate_stubs
from tests.snapshot import assert_snapshot
from tests.stubs.catalogs import awkward_catalog
from tests.stubs.signing import signed_cards

FIXED_KEY = SigningKey(Ed25519PrivateKey.from_private_bytes(b"\x05" * 32))


def test_the_generated_module_for_an_awkward_server_is_unchanged() -> None:
    stubs = generate_stubs(signed_cards(awkward_catalog(), FIXED_KEY))
    assert_snapshot(stubs.files["awkward_server_1.py"], "stub_awkward_server_1.py.txt")
