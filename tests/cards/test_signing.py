"""Signing, keys and the trust set (P-SIG-3..P-SIG-7, P-SIG-9)."""

from __future__ import annotations

import base64
import inspect
import os
import stat
from pathlib import Path

import pytest

import cartograph.cards.keys as keys_module
import cartograph.cards.signing as signing_module
import cartograph.cards.trust as trust_module
import cartograph.cards.verified as verified_module
from cartograph.cards.attest import attest_with_unsafe_throwaway_key, build_body
from cartograph.cards.canonical import canonical_bytes
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.keys import (
    SigningKey,
    VerifyingKey,
    key_id_for,
    load_private_key,
    load_public_key,
    write_private_key,
    write_public_key,
)
from cartograph.cards.model import Card, CardBody
from cartograph.cards.signing import CARD_SIGNATURE_TYPE, sign_card, signed_message, verify_card
from cartograph.cards.trust import TrustedKey, TrustSet, load_trust, save_trust
from cartograph.catalog.model import Catalog
from cartograph.errors import KeyFileError, RevokedKeyError, SignatureError, UnknownKeyError


def files_body(catalog: Catalog, version: int = 1) -> CardBody:
    server = catalog.server("files")
    assert server is not None
    generator = TemplateGenerator()
    return build_body(server, generator.describe(server), generator.info, version=version)


def with_body_change(card: Card, path: list[str | int], value: object) -> Card:
    data = card.json_dict()
    node = data["body"]
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return Card.model_validate(data)


@pytest.mark.promise("P-SIG-3")
@pytest.mark.parametrize(
    "path",
    [
        ["tools", 0, "description"],
        ["tools", 1, "digest"],
        ["tools", 0, "pins", "input_schema"],
        ["identity", "server"],
        ["identity", "endpoint"],
        ["capability", "summary"],
        ["provenance", "card_version"],
    ],
)
def test_changing_any_signed_field_fails_verification(
    catalog: Catalog, path: list[str | int]
) -> None:
    key = SigningKey.generate()
    card = sign_card(files_body(catalog), key)
    original = card.json_dict()["body"]
    node = original
    for step in path[:-1]:
        node = node[step]
    changed = 7 if isinstance(node[path[-1]], int) else str(node[path[-1]]) + "x"
    tampered = with_body_change(card, path, changed)

    with pytest.raises(SignatureError) as raised:
        verify_card(tampered, TrustSet.of(key.public), expected_server=tampered.server)
    assert raised.value.code == "bad_signature"


@pytest.mark.promise("P-SIG-3")
def test_flipping_any_single_bit_of_the_signature_fails(catalog: Catalog) -> None:
    key = SigningKey.generate()
    card = sign_card(files_body(catalog), key)
    raw = base64.b64decode(card.signature.value)
    for index in (0, 31, 63):
        flipped = bytearray(raw)
        flipped[index] ^= 0x80
        bad = card.model_copy(
            update={
                "signature": card.signature.model_copy(
                    update={"value": base64.b64encode(bytes(flipped)).decode()}
                )
            }
        )
        with pytest.raises(SignatureError) as raised:
            verify_card(bad, TrustSet.of(key.public), expected_server="files")
        assert raised.value.code == "bad_signature"


@pytest.mark.promise("P-SIG-5")
def test_signature_over_bare_canonical_bytes_does_not_verify_as_a_card(catalog: Catalog) -> None:
    key = SigningKey.generate()
    body = files_body(catalog)
    card = sign_card(body, key)
    bare = key.sign(canonical_bytes(body.json_dict()))
    forged = card.model_copy(
        update={
            "signature": card.signature.model_copy(
                update={"value": base64.b64encode(bare).decode()}
            )
        }
    )

    assert signed_message(body, key.key_id).startswith(CARD_SIGNATURE_TYPE + b"\x00")
    with pytest.raises(SignatureError) as raised:
        verify_card(forged, TrustSet.of(key.public), expected_server="files")
    assert raised.value.code == "bad_signature"


@pytest.mark.promise("P-SIG-4")
def test_card_presented_under_another_servers_name_is_rejected(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    key = SigningKey.generate()
    weather = sign_card(cards["weather"].body, key)

    with pytest.raises(SignatureError) as raised:
        verify_card(weather, TrustSet.of(key.public), expected_server="files")
    assert raised.value.code == "card_server_mismatch"


@pytest.mark.promise("P-SIG-4")
def test_renaming_a_tool_inside_a_signed_card_is_rejected(catalog: Catalog) -> None:
    key = SigningKey.generate()
    card = sign_card(files_body(catalog), key)
    renamed = with_body_change(card, ["tools", 0, "name"], "delete_everything")

    with pytest.raises(SignatureError) as raised:
        verify_card(renamed, TrustSet.of(key.public), expected_server="files")
    assert raised.value.code == "bad_signature"


@pytest.mark.promise("P-SIG-6")
def test_key_id_is_the_sha256_of_the_raw_public_key() -> None:
    key = SigningKey.generate()
    import hashlib

    assert key.key_id == hashlib.sha256(key.public.raw).hexdigest() == key_id_for(key.public.raw)


@pytest.mark.promise("P-SIG-6")
def test_private_key_file_is_created_0600_and_round_trips(tmp_path: Path) -> None:
    key = SigningKey.generate()
    path = tmp_path / "keys" / "operator.key"
    write_private_key(key, path)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_private_key(path).key_id == key.key_id


@pytest.mark.promise("P-SIG-6")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_group_or_world_readable_private_key_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "operator.key"
    write_private_key(SigningKey.generate(), path)
    os.chmod(path, mode)

    with pytest.raises(KeyFileError) as raised:
        load_private_key(path)
    assert raised.value.code == "key_permissions"


@pytest.mark.promise("P-SIG-6")
def test_public_key_file_holds_only_public_material(tmp_path: Path) -> None:
    key = SigningKey.generate()
    public = tmp_path / "operator.pub"
    write_public_key(key.public, public)
    text = public.read_text()

    assert "PRIVATE" not in text
    assert load_public_key(public).key_id == key.key_id
    private = tmp_path / "operator.key"
    write_private_key(key, private)
    with pytest.raises(KeyFileError) as raised:
        load_public_key(private)
    assert raised.value.code == "key_private_material"


@pytest.mark.promise("P-SIG-6")
def test_trust_file_key_ids_are_recomputed_on_load(tmp_path: Path) -> None:
    key = SigningKey.generate()
    path = tmp_path / "trust.toml"
    save_trust(TrustSet.of(key.public), path)

    assert load_trust(path).keys[0].key_id == key.key_id
    path.write_text(path.read_text().replace(key.key_id, key_id_for(b"\x01" * 32)))
    with pytest.raises(KeyFileError) as raised:
        load_trust(path)
    assert raised.value.code == "key_id_mismatch"


@pytest.mark.promise("P-SIG-7")
def test_empty_trust_set_verifies_nothing(catalog: Catalog) -> None:
    card = sign_card(files_body(catalog), SigningKey.generate())

    with pytest.raises(UnknownKeyError) as raised:
        verify_card(card, TrustSet(), expected_server="files")
    assert raised.value.code == "empty_trust_set"


@pytest.mark.promise("P-SIG-7")
def test_missing_trust_file_is_an_empty_trust_set(tmp_path: Path) -> None:
    assert load_trust(tmp_path / "absent.toml") == TrustSet()


@pytest.mark.promise("P-SIG-7")
def test_during_rotation_old_and_new_keys_both_verify_and_revocation_ends_it(
    catalog: Catalog, tmp_path: Path
) -> None:
    old, new = SigningKey.generate(), SigningKey.generate()
    path = tmp_path / "trust.toml"
    save_trust(TrustSet.of(old.public, new.public), path)
    old_card = sign_card(files_body(catalog), old)
    new_card = sign_card(files_body(catalog, version=2), new)

    for card in (old_card, new_card):
        verify_card(card, load_trust(path), expected_server="files")

    save_trust(load_trust(path).revoke(old.key_id), path)
    with pytest.raises(RevokedKeyError) as raised:
        verify_card(old_card, load_trust(path), expected_server="files")
    assert raised.value.code == "revoked_key"
    verify_card(new_card, load_trust(path), expected_server="files")


@pytest.mark.promise("P-SIG-7")
def test_revoked_key_is_rejected_even_with_a_valid_signature(catalog: Catalog) -> None:
    key = SigningKey.generate()
    card = sign_card(files_body(catalog), key)
    trust = TrustSet.of(key.public).revoke(key.key_id)

    with pytest.raises(RevokedKeyError) as raised:
        verify_card(card, trust, expected_server="files")
    assert raised.value.code == "revoked_key"


@pytest.mark.promise("P-SIG-7")
def test_scoped_key_verifies_only_servers_matching_its_patterns(catalog: Catalog) -> None:
    key = SigningKey.generate()
    trust = TrustSet((TrustedKey(key.public, ("weath*",)),))
    cards = attest_with_unsafe_throwaway_key(catalog)

    verify_card(sign_card(cards["weather"].body, key), trust, expected_server="weather")
    with pytest.raises(UnknownKeyError) as raised:
        verify_card(sign_card(cards["files"].body, key), trust, expected_server="files")
    assert raised.value.code == "key_out_of_scope"


@pytest.mark.promise("P-SIG-9")
def test_public_verification_api_raises_and_never_returns_a_bool() -> None:
    for module in (signing_module, keys_module, trust_module, verified_module):
        for name, member in inspect.getmembers(module, callable):
            if name.startswith("_") or getattr(member, "__module__", "") != module.__name__:
                continue
            functions = (
                [member]
                if inspect.isfunction(member)
                else [
                    f
                    for method, f in inspect.getmembers(member, inspect.isfunction)
                    if not method.startswith("_")
                ]
            )
            for function in functions:
                returns = inspect.signature(function).return_annotation
                assert returns not in (bool, "bool"), f"{module.__name__}.{name} returns bool"
    assert verify_card.__annotations__["return"] == "Verification"
    assert VerifyingKey.verify.__annotations__["return"] == "None"


@pytest.mark.promise("P-SIG-2")
@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("provenance.card_version", 1.0),
        ("provenance.card_version", True),
        ("provenance.overrides_digest", None),
    ],
    ids=["int written as float", "int written as bool", "field dropped"],
)
def test_a_card_file_the_model_would_coerce_is_refused_at_parse(
    catalog: Catalog, where: str, value: object
) -> None:
    import json

    from cartograph.cards.signing import parse_card, render_card
    from cartograph.errors import CardFormatError

    card = sign_card(files_body(catalog), SigningKey.generate())
    raw = json.loads(render_card(card))
    *parents, leaf = ["body", *where.split(".")]
    target = raw
    for name in parents:
        target = target[name]
    if value is None:
        del target[leaf]
    else:
        target[leaf] = value

    with pytest.raises(CardFormatError) as raised:
        parse_card(json.dumps(raw).encode())
    assert raised.value.code == "card_not_canonical"
