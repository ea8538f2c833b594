"""An index over the fake model, its rankings and snapshot files: shared by the index tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cartograph.cards.verified import VerifiedCards
from cartograph.index.embedders.base import Vectors
from cartograph.index.embedders.fake import FakeEmbedder
from cartograph.index.rankers import RANKER_NAMES
from cartograph.index.tool_index import ToolIndex
from cartograph.index.vector_store import VectorStore

TASKS = (
    "read a file",
    "write text to a file, then list the folder",
    "what time is it in Tokyo",
    "search the web for news and save it",
)


def build(cards: VerifiedCards, state: Path, embedder: FakeEmbedder | None = None) -> ToolIndex:
    return ToolIndex.build(cards, embedder or FakeEmbedder(), store=VectorStore(state))


def rankings(index: ToolIndex) -> dict[tuple[str, str], list[tuple[tuple[str, str], float]]]:
    out = {}
    for method in (m for m in RANKER_NAMES if m != "random"):
        for task in TASKS:
            ranked = index.rank(task, 5, method=method, depth=10)
            out[(method, task)] = [(index.corpus.key(i), round(s, 9)) for i, s in ranked]
    return out


def snapshot_files(state: Path) -> list[Path]:
    return sorted(p for p in (state / "index").glob("*/serving-*/**/*") if p.is_file())


class CountingEmbedder(FakeEmbedder):
    """The fake model, counting every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return super().embed(texts)
