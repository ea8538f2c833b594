"""The paper's baselines (Table 4): groupings without margins or diagnosis.

* Cosine τ: connected components of the graph "cosine similarity ≥ τ" over
  the same card embeddings Rift uses.
* Jaccard J: connected components of the graph "token-set Jaccard > J" over
  the same card text Layer 3 tokenises.

Both find groups; neither can say which group actually breaks retrieval.
:func:`comparison_rows` lays them beside Rift's own clusters, with and
without margins (the ablation), in the Tables' layout.
Jaccard's intersections are one product of the tool × token incidence matrix:
dense for catalogs where that is small (no scipy import, which costs more
start-up time than the product), sparse beyond.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from cartograph import error_codes as codes
from cartograph.errors import RetrievalError
from cartograph.index.embedders.base import Vectors
from cartograph.rift.clustering import Groups, components, threshold_pairs
from cartograph.rift.model import Cluster, Grouping, RiftSettings, ToolRef

DENSE_CELLS: Final = 5_000_000
DENSE_TOOLS: Final = 2_000
"""Largest incidence matrix (tools × vocabulary) and tool count computed densely."""


def cosine_groups(vectors: Vectors, tau: float) -> Groups:
    """Tools linked by any chain of pairs with cosine ≥ τ."""
    return components(len(vectors), threshold_pairs(vectors, tau))


def jaccard_groups(token_sets: Sequence[frozenset[str]], threshold: float) -> Groups:
    """Tools linked by any chain of pairs with token Jaccard > ``threshold``."""
    n = len(token_sets)
    vocabulary: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for row, tokens in enumerate(token_sets):
        for token in tokens:
            rows.append(row)
            cols.append(vocabulary.setdefault(token, len(vocabulary)))
    if not rows:
        return []
    sizes = np.asarray([len(t) for t in token_sets], dtype=np.float64)
    if n <= DENSE_TOOLS and n * len(vocabulary) <= DENSE_CELLS:
        left, right, overlap = _dense_overlap(rows, cols, n, len(vocabulary))
    else:
        left, right, overlap = _sparse_overlap(rows, cols, n, len(vocabulary))
    union = sizes[left] + sizes[right] - overlap
    keep = overlap / union > threshold
    return components(n, (left[keep].astype(np.intp), right[keep].astype(np.intp)))


_Overlap = tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float64]]


def _dense_overlap(rows: list[int], cols: list[int], n: int, width: int) -> _Overlap:
    matrix = np.zeros((n, width), dtype=np.float32)
    matrix[rows, cols] = 1.0
    shared = np.triu(matrix @ matrix.T, k=1)
    left, right = np.nonzero(shared)
    return left.astype(np.intp), right.astype(np.intp), shared[left, right].astype(np.float64)


def _sparse_overlap(rows: list[int], cols: list[int], n: int, width: int) -> _Overlap:
    try:
        from scipy.sparse import csr_matrix, triu
    except ImportError as missing:  # scipy is the `rift` extra: 140 MB for this one product
        raise RetrievalError(
            f"Rift's Jaccard baseline over {n} tools needs scipy's sparse matrices; "
            "install them with `pip install 'cartograph[rift]'`",
            code=codes.RIFT_NEEDS_SCIPY,
        ) from missing

    ones = np.ones(len(rows), dtype=np.float64)
    matrix = csr_matrix((ones, (rows, cols)), shape=(n, width))
    shared = triu(matrix @ matrix.T, k=1).tocoo()
    return shared.row.astype(np.intp), shared.col.astype(np.intp), shared.data.astype(np.float64)


def comparison_rows(
    clusters: Sequence[Cluster],
    vectors: Vectors,
    token_sets: Sequence[frozenset[str]],
    tools: Sequence[ToolRef],
    settings: RiftSettings,
) -> list[Grouping]:
    """The ablation table: Rift with and without margins, then both baselines.

    ``vectors``, ``token_sets`` and ``tools`` are row-aligned with the catalog.
    """
    risky = {m.key for c in clusters if c.risk in ("HIGH", "MEDIUM") for m in c.members}
    rows: list[Grouping] = []
    if settings.margin:
        rows.append(_rift_row("Rift (3-layer)", clusters, risky))
    unrated = [c.model_copy(update={"risk": "UNRATED"}) for c in clusters]
    rows.append(_rift_row("Rift --no-margin", unrated, risky))
    cosine = cosine_groups(vectors, settings.cosine_tau)
    rows.append(_baseline_row(f"Cosine τ={settings.cosine_tau:g}", cosine, tools, risky))
    jaccard = jaccard_groups(token_sets, settings.jaccard_j)
    rows.append(_baseline_row(f"Jaccard J>{settings.jaccard_j:g}", jaccard, tools, risky))
    return rows


def _rift_row(method: str, clusters: Sequence[Cluster], risky: set[str]) -> Grouping:
    grouped = {m.key for c in clusters for m in c.members}
    return Grouping(
        method=method,
        clusters=len(clusters),
        high=sum(c.risk == "HIGH" for c in clusters),
        medium=sum(c.risk == "MEDIUM" for c in clusters),
        low=None
        if any(c.risk == "UNRATED" for c in clusters)
        else sum(c.risk == "LOW" for c in clusters),
        tools=len(grouped),
        within=sum(c.scope == "within-server" for c in clusters),
        cross=sum(c.scope == "cross-server" for c in clusters),
        largest=max((c.size for c in clusters), default=0),
        regenerate=sum(len(c.regenerate) for c in clusters),
        covers_risky=_coverage(grouped, risky),
    )


def _baseline_row(
    method: str, groups: Groups, tools: Sequence[ToolRef], risky: set[str]
) -> Grouping:
    within = sum(len({tools[i].server for i in g}) == 1 for g in groups)
    grouped = {tools[i].key for g in groups for i in g}
    return Grouping(
        method=method,
        clusters=len(groups),
        tools=len(grouped),
        within=within,
        cross=len(groups) - within,
        largest=max((len(g) for g in groups), default=0),
        covers_risky=_coverage(grouped, risky),
    )


def _coverage(grouped: set[str], risky: set[str]) -> float | None:
    return round(len(grouped & risky) / len(risky), 3) if risky else None


__all__ = ["comparison_rows", "cosine_groups", "jaccard_groups"]
