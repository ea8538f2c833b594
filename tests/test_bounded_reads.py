"""Bounded reads of state files: never past the limit, never a device, never a link out (P-REL-13).

``cartograph.fsutil.read_bounded`` is what every reader of the state directory
goes through; these pin its contract, and the smaller readers (trust file,
OAuth tokens, audit spools, a catalog snapshot) that share it. Each read of an
endless file runs under a deadline, so the bug fails a test instead of the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
import pytest

from cartograph.cards.trust import load_trust
from cartograph.catalog.snapshot import load_catalog
from cartograph.errors import CatalogError, ConfigError, KeyFileError, StateFileError
from cartograph.fsutil import open_bounded, read_bounded
from cartograph.storage.spool import orphans, read_records
from cartograph.upstream.oauth import TokenFile

DEADLINE = 10.0
DEV_ZERO = Path("/dev/zero")
T = TypeVar("T")

pytestmark = [pytest.mark.anyio, pytest.mark.promise("P-REL-13")]


async def _bounded(work: Callable[[], T]) -> T:
    with anyio.fail_after(DEADLINE):
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


def _link(path: Path, target: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "table.json"
    path.write_bytes(b"x" * 10)

    assert read_bounded(path, 10) == b"x" * 10
    with pytest.raises(StateFileError) as raised:
        read_bounded(path, 9)

    assert raised.value.code == "state_file_too_large"


async def test_attack_dev_zero_is_refused_as_a_device_not_read(tmp_path: Path) -> None:
    linked = _link(tmp_path / "state" / "table.json", DEV_ZERO)

    def refused(inside: Path | None) -> str:
        with pytest.raises(StateFileError) as raised:
            read_bounded(linked, 1024, inside=inside)
        return raised.value.code

    # followed or not, a device is never read
    assert await _bounded(lambda: refused(None)) == "state_file_unsafe"
    assert await _bounded(lambda: refused(DEV_ZERO.parent)) == "state_file_unsafe"


async def test_attack_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "table.json"
    os.mkfifo(fifo)

    with pytest.raises(StateFileError) as raised:
        await _bounded(lambda: read_bounded(fifo, 1024, inside=tmp_path))

    assert raised.value.code == "state_file_unsafe"


def test_attack_a_link_out_of_the_state_directory_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere" / "secret"
    secret.parent.mkdir()
    secret.write_bytes(b"{}")
    state = tmp_path / "state"
    linked = _link(state / "cards" / "table.json", secret)

    with pytest.raises(StateFileError) as raised:
        read_bounded(linked, 1024, inside=state)

    assert raised.value.code == "state_file_unsafe"


def test_attack_a_linked_folder_out_of_the_state_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "table.json").write_bytes(b"{}")
    state = tmp_path / "state"
    _link(state / "replies", tmp_path / "elsewhere")

    with pytest.raises(StateFileError) as raised:
        read_bounded(state / "replies" / "table.json", 1024, inside=state)

    assert raised.value.code == "state_file_unsafe"


def test_a_link_inside_the_state_directory_and_a_linked_state_directory_are_read(
    tmp_path: Path,
) -> None:
    real = tmp_path / "disk" / "state"
    (real / "cards").mkdir(parents=True)
    (real / "cards" / "real.json").write_bytes(b"{}")
    _link(real / "cards" / "table.json", real / "cards" / "real.json")
    state = _link(tmp_path / "home" / "state", real)  # e.g. ~/.cartograph on another disk

    assert read_bounded(state / "cards" / "table.json", 1024, inside=state) == b"{}"


def test_open_bounded_checks_the_size_of_what_it_opened(tmp_path: Path) -> None:
    path = tmp_path / "segment.bin"
    path.write_bytes(b"x" * 100)

    with open_bounded(path, 100, inside=tmp_path) as handle:
        assert handle.read(10) == b"x" * 10
    with pytest.raises(StateFileError), open_bounded(path, 99, inside=tmp_path):
        pass


def test_a_missing_file_raises_file_not_found_as_open_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "absent.json", 10, inside=tmp_path)


async def test_attack_trust_file_linked_to_dev_zero_is_refused_quickly(tmp_path: Path) -> None:
    trust = _link(tmp_path / "trust.toml", DEV_ZERO)

    with pytest.raises(KeyFileError) as raised:
        await _bounded(lambda: load_trust(trust))

    assert raised.value.code == "trust_file"


async def test_attack_oauth_token_file_linked_to_dev_zero_is_refused_quickly(
    tmp_path: Path,
) -> None:
    tokens = TokenFile(_link(tmp_path / "state" / "oauth" / "saas.json", DEV_ZERO))

    with pytest.raises(ConfigError) as raised:
        await _bounded(tokens.read)

    assert raised.value.code == "oauth_store_corrupt"


async def test_attack_catalog_snapshot_linked_to_dev_zero_is_refused_quickly(
    tmp_path: Path,
) -> None:
    catalog = _link(tmp_path / "catalog.json", DEV_ZERO)

    with pytest.raises(CatalogError) as raised:
        await _bounded(lambda: load_catalog(catalog))

    assert raised.value.code == "catalog_unreadable"


async def test_attack_an_orphan_audit_spool_linked_to_dev_zero_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "audit-spool"
    _link(folder / "gone-1-abc.jsonl", DEV_ZERO)
    (folder / "gone-2-def.jsonl").write_text('{"id": "r1"}\n', encoding="utf-8")

    def adoptable() -> list[str]:
        with orphans(folder, folder / "mine.jsonl") as paths:
            return [p.name for p in paths]

    assert await _bounded(adoptable) == ["gone-2-def.jsonl"]
    assert read_records(folder / "gone-2-def.jsonl") == [{"id": "r1"}]
    with pytest.raises(StateFileError):
        await _bounded(lambda: read_records(folder / "gone-1-abc.jsonl"))
