"""Fixtures for Rift: hand-built catalogs, explicit vectors, and verified cards."""

from __future__ import annotations

import pytest

from cartograph.index.embedders import FakeEmbedder
from cartograph.rift.analysis import EmbedFn, make_embed_fn


@pytest.fixture
def fake_embed() -> EmbedFn:
    return make_embed_fn(FakeEmbedder())
