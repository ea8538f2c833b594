"""Loading benchmark queries (``queries.jsonl``, format in ``bench/README.md``)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from cartograph import error_codes as codes
from cartograph.errors import CatalogError
from cartograph.eval.metrics import Judgement


class GoldTool(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    server: str
    tool: str


class EvalQuery(BaseModel):
    """One task with the tools one correct solution uses."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    query: str
    gold: tuple[GoldTool, ...]
    gold_groups: tuple[tuple[GoldTool, ...], ...] = ()

    def judgement(self) -> Judgement:
        gold = frozenset((g.server, g.tool) for g in self.gold)
        groups = self.gold_groups or tuple((g,) for g in self.gold)
        return Judgement(
            gold=gold,
            groups=tuple(frozenset((g.server, g.tool) for g in grp) for grp in groups),
        )


def load_queries(path: Path) -> list[EvalQuery]:
    """Every query of a ``queries.jsonl`` file; a bad line raises ``CatalogError``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CatalogError(
            f"cannot read queries file {path}: {exc}", code=codes.QUERIES_UNREADABLE
        ) from exc
    queries: list[EvalQuery] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            queries.append(EvalQuery.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise CatalogError(
                f"{path}:{number}: not a query object with id, query and gold "
                f"({exc.__class__.__name__})",
                code=codes.BAD_QUERY_LINE,
            ) from exc
    if not queries:
        raise CatalogError(f"{path} holds no queries", code=codes.NO_QUERIES)
    return queries
