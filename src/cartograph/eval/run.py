"""``cartograph eval`` as a library call: build each card set's index, run the harness."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cartograph import error_codes as codes
from cartograph.cards.attest import attest_with_unsafe_throwaway_key
from cartograph.cards.store import CardStore
from cartograph.cards.trust import load_trust
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.snapshot import load_catalog
from cartograph.errors import OptionError
from cartograph.eval.data import load_queries
from cartograph.eval.harness import EvalReport, Progress, evaluate
from cartograph.eval.raw import raw_entries
from cartograph.index.embedders import get_embedder
from cartograph.index.rankers import RANKER_NAMES
from cartograph.index.tool_index import ToolIndex


def run_eval(
    catalog_path: Path,
    queries_path: Path,
    *,
    methods: Sequence[str] | None = None,
    embedder: str | None = None,
    cards_dir: Path | None = None,
    trust: Path | None = None,
    raw: bool = True,
    progress: Progress | None = None,
) -> EvalReport:
    """Template cards (and raw text, and ``cards_dir``) × every ranker, on one query set."""
    catalog = load_catalog(catalog_path)
    queries = load_queries(queries_path)
    model = get_embedder(embedder or "minilm")
    indexes = {"template": ToolIndex.build(attest_with_unsafe_throwaway_key(catalog), model)}
    if raw:
        indexes["raw"] = ToolIndex.from_entries(raw_entries(catalog), model)
    if cards_dir is not None:
        indexes[cards_dir.name or "cards"] = ToolIndex.build(_load_cards(cards_dir, trust), model)
    return evaluate(indexes, queries, list(methods or RANKER_NAMES), progress=progress)


def _load_cards(cards_dir: Path, trust: Path | None) -> VerifiedCards:
    """Signed cards from a folder, verified against ``trust`` (never trusted blindly)."""
    if trust is None:
        raise OptionError(
            "--cards needs --trust FILE naming the keys that signed them",
            code=codes.EVAL_NEEDS_TRUST,
        )
    return CardStore(cards_dir).load_verified(load_trust(trust))
