"""The card store and bootstrap: atomic writes, versions, rollback, size limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cartograph.cards import store as store_module
from cartograph.cards.bootstrap import attest_catalog
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.keys import SigningKey
from cartograph.cards.model import CARD_FORMAT_VERSION
from cartograph.cards.overrides import Overrides, ServerOverride, ToolOverride
from cartograph.cards.signing import render_card, sign_card
from cartograph.cards.store import ACCEPTED_FILE, CardStore, server_from_filename
from cartograph.cards.trust import TrustSet
from cartograph.catalog.model import Catalog
from cartograph.errors import CardFormatError, GeneratorError, RollbackError, SignatureError
from cartograph.fsutil import atomic_write_bytes
from tests.cards.support import bootstrap, with_description


def card_bytes(store: CardStore) -> dict[str, bytes]:
    return {s: store.path_for(s).read_bytes() for s in store.servers()}


def test_bootstrap_writes_a_verifying_card_per_server(tmp_path: Path, catalog: Catalog) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)

    cards = store.load_verified(TrustSet.of(key.public))
    assert sorted(cards) == ["files", "weather"]
    assert all(cards[s].version == 1 for s in cards)


def test_rerunning_bootstrap_leaves_unchanged_cards_byte_identical(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    before = card_bytes(store)
    mtimes = {s: store.path_for(s).stat().st_mtime_ns for s in store.servers()}

    bootstrap(store, key, catalog)

    assert card_bytes(store) == before
    assert {s: store.path_for(s).stat().st_mtime_ns for s in store.servers()} == mtimes


@pytest.mark.promise("P-SIG-8")
def test_bootstrap_bumps_the_version_only_of_the_server_that_changed(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    weather = store.path_for("weather").read_bytes()

    bootstrap(store, key, with_description(catalog, "files", "read_file", "Reads a file."))

    cards = store.load_verified(TrustSet.of(key.public))
    assert cards["files"].version == 2
    assert cards["weather"].version == 1
    assert store.path_for("weather").read_bytes() == weather


def test_bootstrap_for_one_server_leaves_the_others_alone(tmp_path: Path, catalog: Catalog) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog, only={"weather"})

    assert store.servers() == ["weather"]


def test_overrides_replace_generated_text_and_are_signed(tmp_path: Path, catalog: Catalog) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    overrides = Overrides(
        servers={
            "files": ServerOverride(
                summary="Operator-written summary.",
                tools={
                    "read_file": ToolOverride(
                        description="Operator text.",
                        example={"path": "a"},
                        examples=("show me the notes file",),
                    )
                },
            )
        }
    )
    from cartograph.cards.overrides import OverridingGenerator

    attest_catalog(
        catalog,
        store=store,
        key=key,
        generator=OverridingGenerator(TemplateGenerator(), overrides),
        overrides=overrides,
    )

    card = store.load_verified(TrustSet.of(key.public))["files"]
    assert card.body.capability.summary == "Operator-written summary."
    tool = card.tool("read_file")
    assert tool is not None and tool.description == "Operator text."
    assert tool.examples == ("show me the notes file",)
    assert card.body.provenance.overrides_digest == overrides.digest("files")


def test_override_example_that_breaks_the_schema_is_refused(catalog: Catalog) -> None:
    from cartograph.cards.overrides import apply_overrides

    server = catalog.server("files")
    assert server is not None
    bad = Overrides(
        servers={"files": ServerOverride(tools={"read_file": ToolOverride(example={"path": 3})})}
    )
    with pytest.raises(GeneratorError) as raised:
        apply_overrides(server, TemplateGenerator().describe(server), bad)
    assert raised.value.code == "override_bad_example"


def test_normal_load_never_rewrites_cards(tmp_path: Path, catalog: Catalog) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    before = {
        s: (store.path_for(s).read_bytes(), store.path_for(s).stat().st_mtime_ns)
        for s in store.servers()
    }

    store.load_verified(TrustSet.of(key.public))

    assert {
        s: (store.path_for(s).read_bytes(), store.path_for(s).stat().st_mtime_ns)
        for s in store.servers()
    } == before


@pytest.mark.promise("P-REL-9")
def test_crash_mid_write_leaves_the_previous_card_intact(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    before = store.path_for("files").read_bytes()

    def crash(src: str, dst: str) -> None:
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        bootstrap(store, key, with_description(catalog, "files", "read_file", "Changed."))
    monkeypatch.undo()

    assert store.path_for("files").read_bytes() == before
    assert [p.name for p in store.root.iterdir() if p.name.endswith(".tmp")] == []
    assert store.load_verified(TrustSet.of(key.public))["files"].version == 1


@pytest.mark.promise("P-SIG-8")
def test_accepted_versions_are_persisted_across_store_instances(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    old = store.path_for("files").read_bytes()
    bootstrap(store, key, with_description(catalog, "files", "read_file", "Changed."))

    store.path_for("files").write_bytes(old)

    with pytest.raises(RollbackError) as raised:
        CardStore(tmp_path).load_verified(TrustSet.of(key.public))
    assert raised.value.code == "rollback"


@pytest.mark.promise("P-REL-5")
def test_oversized_card_file_is_rejected_at_load(tmp_path: Path, catalog: Catalog) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    with store.path_for("files").open("ab") as handle:
        handle.truncate(9 * 1024 * 1024)

    report = store.load(TrustSet.of(key.public))
    assert report.failures["files"].code == "card_too_large"
    assert isinstance(report.failures["files"], CardFormatError)
    assert "weather" in report.verified


@pytest.mark.promise("P-SIG-3")
def test_flipping_any_byte_of_a_card_file_fails_naming_that_card(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    path = store.path_for("weather")
    data = bytearray(path.read_bytes())
    step = max(1, len(data) // 40)
    for index in range(0, len(data), step):
        if chr(data[index]) in " \n":
            continue
        flipped = bytearray(data)
        flipped[index] ^= 0x01
        path.write_bytes(bytes(flipped))
        report = store.load(TrustSet.of(key.public))
        assert "weather" in report.failures, f"byte {index} flip was accepted"
        assert "files" in report.verified
    path.write_bytes(bytes(data))


@pytest.mark.promise("P-SIG-3")
def test_in_memory_card_is_rechecked_before_being_served(tmp_path: Path, catalog: Catalog) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    cards = store.load_verified(TrustSet.of(key.public))
    tool = cards["weather"].body.tools[0]

    tool.example["latitude"] = 1000

    with pytest.raises(SignatureError) as raised:
        cards.ensure_intact("weather")
    assert raised.value.code == "card_not_intact"


def test_server_names_that_look_like_paths_stay_inside_the_store(tmp_path: Path) -> None:
    store = CardStore(tmp_path)
    for name in ("../escape", "a/b", "..", "鸣潮 MCP", "x.card"):
        path = store.path_for(name)
        assert path.parent == store.root
        assert os.sep not in path.name
        assert server_from_filename(path.name) == name


def many_servers(catalog: Catalog, count: int) -> Catalog:
    base = catalog.servers[0]
    return Catalog(
        servers=tuple(base.model_copy(update={"name": f"server-{i:03d}"}) for i in range(count))
    )


def count_record_writes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Record every atomic write of the accepted-versions record, still performing it."""
    writes: list[Path] = []

    def counting(path: Path, data: bytes, *, mode: int = 0o644) -> None:
        if path.name == ACCEPTED_FILE:
            writes.append(path)
        atomic_write_bytes(path, data, mode=mode)

    monkeypatch.setattr(store_module, "atomic_write_bytes", counting)
    return writes


def test_bootstrap_of_many_servers_writes_the_accepted_record_once(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    writes = count_record_writes(monkeypatch)

    bootstrap(store, key, many_servers(catalog, 30))

    assert len(writes) == 1
    assert len(store.accepted()) == 30
    assert len(store.load_verified(TrustSet.of(key.public))) == 30


def test_unchanged_rerun_of_bootstrap_does_not_rewrite_the_accepted_record(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, many_servers(catalog, 5))
    writes = count_record_writes(monkeypatch)

    bootstrap(store, key, many_servers(catalog, 5))

    assert writes == []


@pytest.mark.promise("P-REL-9")
def test_crash_before_the_batched_record_write_leaves_every_new_card_loadable(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, many_servers(catalog, 4))
    before = store.accepted()
    changed = many_servers(with_description(catalog, "files", "read_file", "Reads a file."), 4)

    def crash(record: object) -> None:
        raise KeyboardInterrupt("crash before the record is written")

    monkeypatch.setattr(store, "_save_accepted", crash)
    with pytest.raises(KeyboardInterrupt):
        bootstrap(store, key, changed)
    monkeypatch.undo()

    assert CardStore(tmp_path).accepted() == before  # the record is still the old one
    report = CardStore(tmp_path).load(TrustSet.of(key.public))
    assert report.failures == {}
    assert {card.version for card in report.verified.values()} == {2}
    assert {e["version"] for e in CardStore(tmp_path).accepted().values()} == {2}


def test_write_many_writes_every_card_and_the_record_once(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, many_servers(catalog, 3))
    cards = [store.read(s) for s in store.servers()]
    fresh = CardStore(tmp_path / "copy")
    writes = count_record_writes(monkeypatch)

    paths = fresh.write_many(cards)

    assert [p.name for p in paths] == [store.path_for(c.server).name for c in cards]
    assert len(writes) == 1
    assert sorted(fresh.accepted()) == store.servers()


def test_bootstrap_rewrites_a_card_of_an_older_format_with_the_next_version(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store = SigningKey.generate(), CardStore(tmp_path)
    bootstrap(store, key, catalog)
    current = store.load_verified(TrustSet.of(key.public))["files"]
    older = current.body.model_copy(update={"format": CARD_FORMAT_VERSION - 1})
    atomic_write_bytes(store.path_for("files"), render_card(sign_card(older, key)))
    with pytest.raises(CardFormatError) as refused:
        store.verify_one("files", TrustSet.of(key.public))
    assert refused.value.code == "card_format_version"

    bootstrap(store, key, catalog)

    card = store.load_verified(TrustSet.of(key.public))["files"]
    assert (card.body.format, card.version) == (CARD_FORMAT_VERSION, 2)
