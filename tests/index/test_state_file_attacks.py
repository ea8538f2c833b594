"""The persisted index and embedding cache refuse endless, huge and linked-out files (P-REL-13).

Each attack swaps one file under ``<state_dir>/index`` or ``<state_dir>/embeddings``
for ``/dev/zero``, a sparse file far over its bound, or a link out of the state
directory (holding the right bytes, so only where it lives is wrong). The build
runs in a worker thread under a deadline; it must finish, rank as a fresh build
does, and log the cause's code.
"""

from __future__ import annotations

import logging
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
import numpy as np
import pytest

from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.index.cache import MAX_SEGMENT_BYTES, EmbeddingCache
from cartograph.index.embedders.fake import FakeEmbedder
from tests.cards.support import small_catalog
from tests.index.support import CountingEmbedder, build, rankings, snapshot_files

DEADLINE = 10.0
DEV_ZERO = Path("/dev/zero")
T = TypeVar("T")

pytestmark = [pytest.mark.anyio, pytest.mark.promise("P-REL-13")]


async def _bounded(work: Callable[[], T]) -> T:
    with anyio.fail_after(DEADLINE):
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


def _snapshot_file(state: Path, name: str) -> Path:
    return next(p for p in snapshot_files(state) if p.name == name)


def _move_out(path: Path, outside: Path) -> None:
    """Put ``path``'s bytes at ``outside`` and leave a link to them in its place."""
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(path, outside)
    path.symlink_to(outside)


async def test_attack_snapshot_record_symlinked_to_dev_zero_is_refused_quickly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    fresh = build(cards, tmp_path)
    meta = _snapshot_file(tmp_path, "meta.json")
    meta.unlink()
    meta.symlink_to(DEV_ZERO)

    with caplog.at_level(logging.WARNING):
        rebuilt = await _bounded(lambda: build(cards, tmp_path))

    assert rankings(rebuilt) == rankings(fresh)
    assert "persisted_index_damaged" in caplog.text and "state_file_unsafe" in caplog.text


async def test_attack_huge_snapshot_file_is_refused_without_hashing_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    fresh = build(cards, tmp_path)
    with _snapshot_file(tmp_path, "vectors.npy").open("r+b") as handle:
        handle.truncate(64 * 1024**3)  # sparse 64 GiB: hashing it all is minutes

    with caplog.at_level(logging.WARNING):
        rebuilt = await _bounded(lambda: build(cards, tmp_path))

    assert rankings(rebuilt) == rankings(fresh)
    assert "state_file_too_large" in caplog.text


async def test_attack_snapshot_folder_symlinked_out_of_the_state_directory_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    fresh = build(cards, state)
    folder = _snapshot_file(state, "meta.json").parent
    _move_out(folder, tmp_path / "elsewhere" / folder.name)  # intact, but not ours

    with caplog.at_level(logging.WARNING):
        rebuilt = await _bounded(lambda: build(cards, state))

    assert rankings(rebuilt) == rankings(fresh)
    assert "state_file_unsafe" in caplog.text
    assert (tmp_path / "elsewhere" / folder.name / "meta.json").is_file()  # never deleted


async def test_attack_vector_block_symlinked_out_of_the_state_directory_is_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    cards = attest_with_unsafe_throwaway_key(small_catalog())
    build(cards, state, CountingEmbedder())
    for snapshot in (state / "index").glob("*/serving-*"):
        shutil.rmtree(snapshot)  # the snapshot would answer before any block is read
    block = sorted((state / "index").glob("*/*.npy"))[0]
    _move_out(block, tmp_path / "elsewhere" / block.name)
    model = CountingEmbedder()

    with caplog.at_level(logging.WARNING):
        await _bounded(lambda: build(cards, state, model))

    assert model.texts  # that card's vectors came from the embedder, not the link
    assert "state_file_unsafe" in caplog.text


async def test_attack_cache_segment_symlinked_out_of_its_folder_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    model = FakeEmbedder(64)
    EmbeddingCache(state).embed_cached(model, ["alpha", "beta"])
    folder = EmbeddingCache(state).folder_for(model.model_id)
    segment = next(folder.glob("seg-*.bin"))
    _move_out(segment, tmp_path / "elsewhere" / segment.name)

    with caplog.at_level(logging.WARNING):
        cache = await _bounded(lambda: EmbeddingCache(state))
        vectors = await _bounded(lambda: cache.embed_cached(model, ["alpha", "beta"]))

    assert cache.last.misses == 2  # embedded again, not read through the link
    np.testing.assert_array_equal(vectors, model.embed(["alpha", "beta"]))
    assert "state_file_unsafe" in caplog.text


async def test_attack_huge_cache_segment_is_refused_before_its_keys_are_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = FakeEmbedder(64)
    folder = EmbeddingCache(tmp_path).folder_for(model.model_id)
    folder.mkdir(parents=True)
    count = MAX_SEGMENT_BYTES // (32 + 4 * model.dim) + 1  # its header agrees with its size
    segment = folder / "seg-huge.bin"
    with segment.open("wb") as handle:
        handle.write(struct.pack("<8sII", b"CGEMB1\x00\x00", model.dim, count))
        handle.truncate(16 + count * (32 + 4 * model.dim))

    with caplog.at_level(logging.WARNING):
        cache = await _bounded(lambda: EmbeddingCache(tmp_path))
        vectors = await _bounded(lambda: cache.embed_cached(model, ["alpha"]))

    assert cache.last.misses == 1
    assert vectors.shape == (1, model.dim)
    assert "state_file_too_large" in caplog.text
    assert segment.stat().st_size > MAX_SEGMENT_BYTES  # left for the operator, never read
