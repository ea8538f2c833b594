"""`[index] pooled_steps` in the config file reaches the index the runtime serves from."""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.config.loader import load_config
from cartograph.server.runtime.catalog import CatalogRuntime
from tests.helpers.support import scriptable, toml_for


async def served_index_pooled_steps(tmp_path: Path, extra_index_line: str) -> bool:
    text = toml_for(tmp_path / "state", scriptable("calc"))
    text = text.replace('embedder = "fake"\n', f'embedder = "fake"\n{extra_index_line}\n', 1)
    path = tmp_path / "cartograph.toml"
    path.write_text(text, encoding="utf-8")
    config = load_config(path)
    runtime = await CatalogRuntime.start(config, config.servers, unsafe_throwaway_key=True)
    try:
        runtime.discover("add two numbers")  # the index is built and answers
        assert runtime.index.current is not None
        return bool(runtime.index.current.pooled_steps)
    finally:
        await runtime.aclose()


@pytest.mark.anyio
async def test_pooled_steps_off_in_the_config_file_reaches_the_served_index(
    tmp_path: Path,
) -> None:
    assert await served_index_pooled_steps(tmp_path, "pooled_steps = false") is False


@pytest.mark.anyio
async def test_the_served_index_pools_steps_by_default(tmp_path: Path) -> None:
    # One model run per first-seen task (issue 29); the protocol table in
    # docs/retrieval.md is why it is the default.
    assert await served_index_pooled_steps(tmp_path, "") is True
