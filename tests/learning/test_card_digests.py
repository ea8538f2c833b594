"""Evidence keys (per-tool card fingerprints) are computed only for servers looked up."""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.cards import signing as signing_module
from cartograph.cards import verified as verified_module
from cartograph.cards.keys import SigningKey
from cartograph.cards.manifest import load_with_manifest
from cartograph.cards.store import CardStore
from cartograph.cards.trust import TrustSet
from cartograph.cards.verified import fingerprint
from cartograph.learning.catalog import card_digests
from tests.cards.support import bootstrap, small_catalog


def test_card_digests_parse_only_the_servers_looked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, small_catalog())
    report = load_with_manifest(store, TrustSet.of(key.public))
    assert report is not None
    parsed: list[str] = []
    real = signing_module.parse_card

    def counting(data: bytes) -> object:
        card = real(data)
        parsed.append(card.server)
        return card

    monkeypatch.setattr(verified_module, "parse_card", counting)

    digests = card_digests(report.verified)
    tool = report.verified.tool("files", next(iter(digests["files"])))

    assert sorted(digests) == ["files", "weather"]
    assert parsed == ["files"]
    assert tool is not None and digests["files"][tool.name] == fingerprint(tool)


def test_card_digests_are_equal_when_the_verified_cards_are(tmp_path: Path) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, small_catalog())
    trust = TrustSet.of(key.public)
    first, second = (load_with_manifest(store, trust) for _ in range(2))
    assert first is not None and second is not None

    assert card_digests(first.verified) == card_digests(second.verified)
    assert card_digests(first.verified) != card_digests(first.verified.subset(["files"]))
