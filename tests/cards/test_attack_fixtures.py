"""One test per attack-named fixture: each is refused at load with its own code.

The fixtures live in ``fixtures/cards`` and are pinned by ``MANIFEST.sha256``;
see that folder's README. Each test puts the fixture where the store expects a
server's card and loads it the way start-up does.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from cartograph.cards.model import CARD_FORMAT_VERSION
from cartograph.cards.signing import parse_card, verify_card
from cartograph.cards.store import CardStore
from cartograph.cards.trust import TrustSet, load_trust
from cartograph.errors import (
    CardError,
    CardFormatError,
    KeyFileError,
    RevokedKeyError,
    RollbackError,
    SignatureError,
    UnknownKeyError,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CARDS = FIXTURES / "cards"


@pytest.fixture
def trust() -> TrustSet:
    return load_trust(FIXTURES / "trust.toml")


def store_with(tmp_path: Path, fixture: str, server: str = "files") -> CardStore:
    store = CardStore(tmp_path)
    store.root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CARDS / fixture, store.path_for(server))
    return store


def refusal(store: CardStore, trust: TrustSet, server: str = "files") -> CardError:
    report = store.load(trust)
    assert server not in report.verified
    return report.failures[server]


def test_fixtures_are_unmodified() -> None:
    for line in (CARDS / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((CARDS / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.promise("P-SIG-7")
def test_valid_fixture_verifies_under_the_fixture_trust_set(
    tmp_path: Path, trust: TrustSet
) -> None:
    store = store_with(tmp_path, "valid_files_v2.json")
    cards = store.load_verified(trust)
    assert cards["files"].version == 2


@pytest.mark.promise("P-SIG-3")
def test_tampered_description_is_rejected_at_load(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "tampered_description.json"), trust)
    assert isinstance(error, SignatureError)
    assert error.code == "bad_signature"


@pytest.mark.promise("P-SIG-3")
def test_tampered_schema_digest_is_rejected_at_load(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "tampered_schema_digest.json"), trust)
    assert error.code == "bad_signature"


@pytest.mark.promise("P-SIG-3")
def test_tampered_server_identity_is_rejected_at_load(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "tampered_identity.json"), trust)
    assert error.code == "bad_signature"


@pytest.mark.promise("P-SIG-3")
def test_tampered_signature_is_rejected_at_load(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "tampered_signature.json"), trust)
    assert error.code == "bad_signature"


@pytest.mark.promise("P-SIG-3")
def test_key_id_relabelled_to_another_trusted_key_is_rejected(
    tmp_path: Path, trust: TrustSet
) -> None:
    error = refusal(store_with(tmp_path, "tampered_key_id.json"), trust)
    assert isinstance(error, SignatureError)
    assert error.code == "bad_signature"


@pytest.mark.promise("P-SIG-4")
def test_valid_signature_for_other_server_is_rejected_as_this_servers_card(
    tmp_path: Path, trust: TrustSet
) -> None:
    error = refusal(store_with(tmp_path, "valid_signature_other_server.json"), trust)
    assert isinstance(error, SignatureError)
    assert error.code == "card_server_mismatch"


@pytest.mark.promise("P-SIG-4")
def test_card_renamed_to_another_server_is_rejected(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "renamed_server.json"), trust)
    assert error.code == "bad_signature"


@pytest.mark.promise("P-SIG-7")
def test_card_signed_by_revoked_key_is_rejected(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "revoked_key.json"), trust)
    assert isinstance(error, RevokedKeyError)
    assert error.code == "revoked_key"


@pytest.mark.promise("P-SIG-7")
def test_card_signed_by_unknown_key_is_rejected(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "unknown_key.json"), trust)
    assert isinstance(error, UnknownKeyError)
    assert error.code == "unknown_key"


@pytest.mark.promise("P-SIG-7")
def test_card_signed_by_key_outside_its_server_scope_is_rejected(
    tmp_path: Path, trust: TrustSet
) -> None:
    error = refusal(store_with(tmp_path, "out_of_scope_key.json"), trust)
    assert isinstance(error, UnknownKeyError)
    assert error.code == "key_out_of_scope"


@pytest.mark.promise("P-SIG-8")
def test_rolled_back_version_is_rejected_after_a_newer_one_was_accepted(
    tmp_path: Path, trust: TrustSet
) -> None:
    store = store_with(tmp_path, "valid_files_v2.json")
    assert store.load_verified(trust)["files"].version == 2
    shutil.copyfile(CARDS / "rolled_back_version.json", store.path_for("files"))

    error = refusal(store, trust)
    assert isinstance(error, RollbackError)
    assert error.code == "rollback"


@pytest.mark.promise("P-SIG-5")
def test_signature_without_the_card_type_string_is_rejected(
    tmp_path: Path, trust: TrustSet
) -> None:
    error = refusal(store_with(tmp_path, "other_domain_signature.json"), trust)
    assert error.code == "bad_signature"


@pytest.mark.promise("P-SIG-3")
def test_card_claiming_another_algorithm_is_rejected(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "wrong_algorithm.json"), trust)
    assert error.code == "bad_algorithm"


@pytest.mark.promise("P-SIG-2")
def test_card_with_duplicate_keys_is_rejected(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "duplicate_keys.json"), trust)
    assert isinstance(error, CardFormatError)
    assert error.code == "card_duplicate_key"


@pytest.mark.promise("P-SIG-2")
def test_card_with_nan_value_is_rejected(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "nan_value.json"), trust)
    assert error.code == "card_non_finite"


@pytest.mark.promise("P-SIG-2")
def test_card_with_integer_beyond_2_53_is_rejected(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "huge_integer.json"), trust)
    assert error.code == "card_integer_range"


def test_validly_signed_card_in_an_older_format_is_rejected(
    tmp_path: Path, trust: TrustSet
) -> None:
    error = refusal(store_with(tmp_path, "old_format_version.json"), trust)
    assert isinstance(error, CardFormatError)
    assert error.code == "card_format_version"


def test_verification_refuses_a_body_in_another_format(trust: TrustSet) -> None:
    card = parse_card((CARDS / "valid_files_v2.json").read_bytes())
    older = card.model_copy(
        update={"body": card.body.model_copy(update={"format": CARD_FORMAT_VERSION - 1})}
    )

    with pytest.raises(CardFormatError) as raised:
        verify_card(older, trust, expected_server="files")
    assert raised.value.code == "card_format_version"


@pytest.mark.promise("P-REL-8")
def test_truncated_card_is_rejected_as_not_json(tmp_path: Path, trust: TrustSet) -> None:
    error = refusal(store_with(tmp_path, "not_json.json"), trust)
    assert error.code == "card_json"


@pytest.mark.promise("P-SIG-6")
def test_trust_entry_whose_id_is_not_its_keys_hash_is_refused(tmp_path: Path) -> None:
    text = (FIXTURES / "trust.toml").read_text()
    first_id = text.split('id = "', 1)[1][:64]
    bad = tmp_path / "trust.toml"
    bad.write_text(text.replace(first_id, "f" * 64, 1))

    with pytest.raises(KeyFileError) as raised:
        load_trust(bad)
    assert raised.value.code == "key_id_mismatch"
