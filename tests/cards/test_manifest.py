"""The signed card manifest: one signature at start-up, and only the cards it pins are served."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cartograph.cards import keys as keys_module
from cartograph.cards import signing as signing_module
from cartograph.cards import verified as verified_module
from cartograph.cards.keys import SigningKey
from cartograph.cards.manifest import MANIFEST_FILE, load_with_manifest, write_manifest
from cartograph.cards.signing import render_card, sign_card
from cartograph.cards.store import CardStore
from cartograph.cards.trust import TrustedKey, TrustSet
from cartograph.catalog.model import Catalog
from cartograph.errors import (
    CardError,
    RevokedKeyError,
    RollbackError,
    SignatureError,
    UnknownKeyError,
)
from cartograph.fsutil import atomic_write_bytes
from tests.cards.support import bootstrap, with_description


def _load(store: CardStore, trust: TrustSet) -> Any:
    report = load_with_manifest(store, trust)
    assert report is not None
    return report


def test_bootstrap_writes_a_manifest_and_start_up_checks_one_signature(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    checked: list[bytes] = []
    real = keys_module.VerifyingKey.verify

    def counting(self: Any, signature: bytes, message: bytes) -> None:
        checked.append(message.split(b"\x00", 1)[0])
        real(self, signature, message)

    monkeypatch.setattr(keys_module.VerifyingKey, "verify", counting)

    report = _load(store, TrustSet.of(key.public))

    assert sorted(report.verified) == ["files", "weather"] and not report.failures
    assert checked == [b"cartograph/card-manifest/v1"]  # not one per card


@pytest.mark.promise("P-SIG-3")
def test_a_validly_signed_card_the_manifest_does_not_pin_is_not_served(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    trust = TrustSet.of(key.public)
    card = store.read("files")
    resigned = sign_card(
        card.body.model_copy(
            update={
                "provenance": card.body.provenance.model_copy(update={"card_version": 2}),
            }
        ),
        key,
    )
    atomic_write_bytes(store.path_for("files"), render_card(resigned))  # no manifest update

    report = _load(store, trust)

    assert sorted(report.verified) == ["weather"]
    assert report.failures["files"].code == "card_not_in_manifest"
    assert "cartograph bootstrap --server files" in report.failures["files"].message
    assert "files" in store.load(trust).verified  # `cards verify` checks each signature still


@pytest.mark.promise("P-SIG-3")
def test_a_tampered_manifest_is_refused(tmp_path: Path, catalog: Catalog) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    path = store.root / MANIFEST_FILE
    document = json.loads(path.read_text())
    document["body"]["cards"]["files"]["version"] += 1
    path.write_text(json.dumps(document))

    with pytest.raises(CardError) as raised:
        load_with_manifest(store, TrustSet.of(key.public))
    assert raised.value.code == "bad_manifest_signature"


@pytest.mark.promise("P-SIG-8")
def test_an_older_manifest_is_refused_as_a_rollback(tmp_path: Path, catalog: Catalog) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    trust = TrustSet.of(key.public)
    bootstrap(store, key, catalog)
    _load(store, trust)
    old_manifest = (store.root / MANIFEST_FILE).read_bytes()
    old_card = store.path_for("files").read_bytes()
    bootstrap(store, key, with_description(catalog, "files", "read_file", "Read a whole file."))
    _load(store, trust)  # version 2 accepted

    atomic_write_bytes(store.root / MANIFEST_FILE, old_manifest)
    atomic_write_bytes(store.path_for("files"), old_card)

    with pytest.raises(RollbackError) as raised:
        load_with_manifest(store, trust)
    assert raised.value.code == "manifest_rollback"


@pytest.mark.promise("P-SIG-7")
def test_a_manifest_signed_by_an_untrusted_key_verifies_nothing(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    write_manifest(store, SigningKey.generate(), TrustSet.of(key.public))

    with pytest.raises(UnknownKeyError) as raised:
        load_with_manifest(store, TrustSet.of(key.public))
    assert raised.value.code == "unknown_key"


@pytest.mark.promise("P-SIG-7")
def test_a_card_by_a_revoked_key_is_refused_even_when_the_manifest_pins_it(
    tmp_path: Path, catalog: Catalog
) -> None:
    old, new, store = SigningKey.generate(), SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, old, catalog)
    both = TrustSet((TrustedKey(old.public), TrustedKey(new.public)))
    write_manifest(store, new, both)
    revoked = TrustSet((TrustedKey(old.public), TrustedKey(new.public)), frozenset({old.key_id}))

    report = _load(store, revoked)

    assert not report.verified
    assert {type(e) for e in report.failures.values()} == {RevokedKeyError}


@pytest.mark.promise("P-SIG-7")
def test_during_rotation_cards_by_the_old_key_stay_served_under_the_new_keys_manifest(
    tmp_path: Path, catalog: Catalog
) -> None:
    old, new, store = SigningKey.generate(), SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, old, catalog)
    both = TrustSet((TrustedKey(old.public), TrustedKey(new.public)))
    write_manifest(store, new, both)  # the new key vouches; the cards are still the old key's

    report = _load(store, both)

    assert sorted(report.verified) == ["files", "weather"] and not report.failures
    assert {report.verified.signer(s) for s in report.verified} == {old.key_id}


def test_pinned_cards_are_not_parsed_at_start_up(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    parsed: list[str] = []
    real = signing_module.parse_card

    def counting(data: bytes) -> Any:
        card = real(data)
        parsed.append(card.server)
        return card

    monkeypatch.setattr(verified_module, "parse_card", counting)

    cards = _load(store, TrustSet.of(key.public)).verified
    digests = {server: cards.digest(server) for server in cards}

    assert sorted(digests) == ["files", "weather"] and parsed == []
    assert cards["files"].server == "files" and parsed == ["files"]  # parsed when first used


@pytest.mark.promise("P-SIG-3")
def test_a_card_file_replaced_after_start_up_is_refused_when_first_used(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    cards = _load(store, TrustSet.of(key.public)).verified
    card = store.read("files")
    resigned = sign_card(
        card.body.model_copy(
            update={"provenance": card.body.provenance.model_copy(update={"card_version": 2})}
        ),
        key,
    )
    atomic_write_bytes(store.path_for("files"), render_card(resigned))  # validly signed, unpinned

    with pytest.raises(SignatureError) as info:
        cards.ensure_tool_intact("files", card.body.tools[0].name)

    assert info.value.code == "card_not_intact"
    assert cards["weather"].server == "weather"  # the other cards still serve
