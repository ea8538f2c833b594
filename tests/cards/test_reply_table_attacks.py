"""A reply table, card or manifest swapped for something unbounded is refused at once (P-REL-13).

Each attack replaces a file the state directory feeds ``discover`` with one that
never ends (``/dev/zero``), one far over its bound, or a link out of the state
directory. Every read runs in a worker thread under a deadline: the bug these
name read ``/dev/zero`` until the process held 8 GB, so a hang fails the test
instead of the run. Serving falls back as for any damaged table: the server's
tools are answered from its verified card, and the log names the cause's code.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
import pytest

from cartograph.cards import verified as verified_module
from cartograph.cards.keys import SigningKey
from cartograph.cards.manifest import MANIFEST_FILE, load_with_manifest, reply_table_path
from cartograph.cards.replies import MAX_REPLY_TABLE_BYTES, tool_reply
from cartograph.cards.store import CardStore
from cartograph.cards.trust import TrustSet
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog
from cartograph.errors import CardError
from cartograph.index.discover import DiscoverResult, discover
from cartograph.index.embedders import FakeEmbedder
from cartograph.index.tool_index import ToolIndex
from tests.cards.support import bootstrap

DEADLINE = 10.0
"""Seconds any one attack may take; a bounded read takes milliseconds."""
DEV_ZERO = Path("/dev/zero")
TASK = "read a text file from disk"
T = TypeVar("T")

pytestmark = [pytest.mark.anyio, pytest.mark.promise("P-REL-13")]


async def _bounded(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread, failing the test if it runs past :data:`DEADLINE`."""
    with anyio.fail_after(DEADLINE):
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


def _served(state: Path, catalog: Catalog) -> tuple[SigningKey, CardStore, VerifiedCards]:
    key, store = SigningKey.generate(), CardStore(state)
    bootstrap(store, key, catalog)
    report = load_with_manifest(store, TrustSet.of(key.public))
    assert report is not None and not report.failures
    return key, store, report.verified


def _discover(store: CardStore, key: SigningKey, pinned: VerifiedCards) -> DiscoverResult:
    index = ToolIndex.build(store.load_verified(TrustSet.of(key.public)), FakeEmbedder())
    return discover(index, pinned, TASK, k=6, threshold=0.0)


def _replace_with_link(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


def _damage_logged(caplog: pytest.LogCaptureFixture, cause: str) -> bool:
    lines = [r.getMessage() for r in caplog.records if r.name == verified_module.__name__]
    return any("reply_table_damaged" in line and cause in line for line in lines)


async def test_attack_reply_table_symlinked_to_dev_zero_is_refused_quickly(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    key, store, pinned = _served(tmp_path, catalog)
    _replace_with_link(reply_table_path(store, "files"), DEV_ZERO)

    with caplog.at_level(logging.WARNING, logger=verified_module.__name__):
        result = await _bounded(lambda: _discover(store, key, pinned))

    assert any(t.server == "files" for t in result.tools)  # served from the verified card
    assert pinned.reply("files", "read_file") == tool_reply(store.read("files"), "read_file")
    assert _damage_logged(caplog, "state_file_unsafe")


async def test_attack_huge_reply_table_is_refused_without_reading_it(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    key, store, pinned = _served(tmp_path, catalog)
    with reply_table_path(store, "files").open("r+b") as handle:
        handle.truncate(64 * 1024**3)  # 64 GiB, sparse: reading it whole is the bug

    with caplog.at_level(logging.WARNING, logger=verified_module.__name__):
        result = await _bounded(lambda: _discover(store, key, pinned))

    assert any(t.server == "files" for t in result.tools)
    assert _damage_logged(caplog, "state_file_too_large")


async def test_attack_reply_table_just_over_its_bound_is_refused(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    key, store, pinned = _served(tmp_path, catalog)
    reply_table_path(store, "files").write_bytes(b" " * (MAX_REPLY_TABLE_BYTES + 1))

    with caplog.at_level(logging.WARNING, logger=verified_module.__name__):
        result = await _bounded(lambda: _discover(store, key, pinned))

    assert any(t.server == "files" for t in result.tools)
    assert _damage_logged(caplog, "state_file_too_large")


async def test_attack_reply_table_symlinked_out_of_the_state_directory_is_refused(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    key, store, pinned = _served(tmp_path / "state", catalog)
    table = reply_table_path(store, "files")
    outside = tmp_path / "elsewhere" / table.name
    outside.parent.mkdir()
    outside.write_bytes(table.read_bytes())  # the pinned bytes: only where they are is wrong
    _replace_with_link(table, outside)

    with caplog.at_level(logging.WARNING, logger=verified_module.__name__):
        result = await _bounded(lambda: _discover(store, key, pinned))

    assert any(t.server == "files" for t in result.tools)
    assert _damage_logged(caplog, "state_file_unsafe")


async def test_a_reply_table_linked_inside_the_cards_folder_is_still_served(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    _, store, pinned = _served(tmp_path, catalog)
    table = reply_table_path(store, "files")
    moved = store.root / "moved.replies.json"
    os.replace(table, moved)
    table.symlink_to(moved)

    with caplog.at_level(logging.WARNING, logger=verified_module.__name__):
        await _bounded(lambda: pinned.reply("files", "read_file"))

    assert not _damage_logged(caplog, "reply_table")


async def test_attack_reply_table_replaced_by_a_fifo_does_not_block(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    key, store, pinned = _served(tmp_path, catalog)
    table = reply_table_path(store, "files")
    table.unlink()
    os.mkfifo(table)  # opening a FIFO for reading waits for a writer that never comes

    with caplog.at_level(logging.WARNING, logger=verified_module.__name__):
        result = await _bounded(lambda: _discover(store, key, pinned))

    assert any(t.server == "files" for t in result.tools)
    assert _damage_logged(caplog, "state_file_unsafe")


async def test_attack_card_symlinked_to_dev_zero_is_not_served_and_the_rest_load(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store, _ = _served(tmp_path, catalog)
    _replace_with_link(store.path_for("files"), DEV_ZERO)

    report = await _bounded(lambda: load_with_manifest(store, TrustSet.of(key.public)))

    assert report is not None
    assert report.failures["files"].code == "state_file_unsafe"
    assert list(report.verified) == ["weather"]


async def test_attack_manifest_symlinked_to_dev_zero_is_refused_quickly(
    tmp_path: Path, catalog: Catalog
) -> None:
    key, store, _ = _served(tmp_path, catalog)
    _replace_with_link(store.root / MANIFEST_FILE, DEV_ZERO)

    with pytest.raises(CardError) as raised:
        await _bounded(lambda: load_with_manifest(store, TrustSet.of(key.public)))

    assert raised.value.code == "state_file_unsafe"
