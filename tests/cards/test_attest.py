"""unsafe_throwaway_key: the offline path other packages build on."""

from __future__ import annotations

import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.catalog.model import Catalog
from cartograph.errors import SignatureError


def test_the_unsafe_throwaway_key_signs_a_verified_card_for_every_server(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)

    assert sorted(cards) == ["files", "weather"]
    assert [t.name for t in cards["files"].body.tools] == ["read_file", "writeFile"]
    assert cards.signer("files") == cards["files"].signature.key_id
    assert cards.tool_count() == 3


def test_in_memory_card_mutated_after_verification_is_refused(catalog: Catalog) -> None:
    cards = attest_with_unsafe_throwaway_key(catalog)
    cards.ensure_intact("files")

    cards["files"].body.tools[0].input_schema["properties"]["evil"] = {"type": "string"}

    with pytest.raises(SignatureError) as raised:
        cards.ensure_intact("files")
    assert raised.value.code == "card_not_intact"
