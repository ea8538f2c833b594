"""Layer 1: density clustering of tool embeddings (paper §3.4, eq. 9–10).

Agglomerative clustering with distance threshold δ = 1 − θ_sim over cosine
distance: the flat clusters scipy's ``linkage`` + ``fcluster(criterion="distance")``
give (a test checks them against scipy), computed here with a Lance–Williams
update on the small per-component matrix. Importing ``scipy.cluster`` and
``scipy.spatial`` cost 1–2 s of start-up on a busy two-core machine, more than
the whole analysis, so Rift does not. Two things keep it cheap on big catalogs
without changing the answer:

* The pairwise similarity matrix is computed in row blocks and only pairs with
  similarity ≥ θ_sim are kept, as a sparse graph.
* Linkage runs separately inside each connected component of that graph. For
  single, complete and average linkage a flat cluster at threshold δ is always
  connected in the δ-graph (each merge needs at least one pair within δ), so
  clustering component by component gives exactly the global result, in
  memory proportional to the largest component rather than n².

The same threshold graph's components are the plain cosine baseline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import numpy as np
import numpy.typing as npt

from cartograph.index.embedders.base import Vectors
from cartograph.rift.model import Linkage

_BLOCK_ROWS: Final = 1024
# Cosine similarity of identical unit vectors comes out as 1 ± a few ulps;
# comparisons against θ allow for that so identical texts always cluster.
_EPS: Final = 1e-6

Groups = list[list[int]]


def threshold_pairs(vectors: Vectors, theta: float) -> tuple[npt.NDArray[np.intp], ...]:
    """Index pairs (i < j) whose cosine similarity is at least ``theta``."""
    rows: list[npt.NDArray[np.intp]] = []
    cols: list[npt.NDArray[np.intp]] = []
    n = len(vectors)
    for start in range(0, n, _BLOCK_ROWS):
        block = vectors[start : start + _BLOCK_ROWS] @ vectors.T
        r, c = np.nonzero(block >= theta - _EPS)
        r = r + start
        upper = r < c
        rows.append(r[upper])
        cols.append(c[upper])
    empty = np.zeros(0, dtype=np.intp)
    return (np.concatenate(rows) if rows else empty, np.concatenate(cols) if cols else empty)


def components(n: int, pairs: tuple[npt.NDArray[np.intp], ...]) -> Groups:
    """Connected components of size ≥ 2 of the graph on ``n`` nodes with edges ``pairs``."""
    rows, cols = pairs
    parent = np.arange(n)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i

    for a, b in zip(rows.tolist(), cols.tolist(), strict=True):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    labels = np.asarray([find(i) for i in range(n)], dtype=np.int64)
    return _groups_of(labels)


def cluster(vectors: Vectors, theta_sim: float, method: Linkage) -> Groups:
    """Layer 1's candidate clusters (|C| ≥ 2) as lists of row indices, largest first."""
    delta = 1.0 - theta_sim
    found: Groups = []
    for component in components(len(vectors), threshold_pairs(vectors, theta_sim)):
        found.extend(_cluster_component(vectors, component, delta, method))
    return sorted(found, key=lambda g: (-len(g), g[0]))


def cohesion(vectors: Vectors, members: list[int]) -> float:
    """coh(C): mean pairwise cosine similarity over ordered pairs a ≠ b (eq. 10)."""
    sub = vectors[members]
    sims = sub @ sub.T
    k = len(members)
    return float((sims.sum() - np.trace(sims)) / (k * (k - 1)))


def _cluster_component(
    vectors: Vectors, component: list[int], delta: float, method: Linkage
) -> Iterator[list[int]]:
    if len(component) == 2:  # one pair within δ: every linkage merges it
        yield component
        return
    sub = vectors[component].astype(np.float64)
    distances = np.clip(1.0 - sub @ sub.T, 0.0, 2.0)
    for group in agglomerate(distances, delta, method):
        yield [component[i] for i in group]


def agglomerate(distances: npt.NDArray[np.float64], delta: float, method: Linkage) -> Groups:
    """Flat clusters (size ≥ 2) of merging the closest pair while its linkage distance ≤ δ.

    Single, complete and average linkage are monotone, so this equals cutting
    the full dendrogram at δ. Each merge updates one row (Lance–Williams);
    merged-away rows are set to +∞.
    """
    d = distances.astype(np.float64, copy=True)
    k = len(d)
    np.fill_diagonal(d, np.inf)
    size = np.ones(k)
    members: list[list[int]] = [[i] for i in range(k)]
    while k > 1:
        flat = int(np.argmin(d))
        i, j = divmod(flat, k)
        if d[i, j] > delta + _EPS:
            break
        if method == "complete":
            row = np.maximum(d[i], d[j])
        elif method == "single":
            row = np.minimum(d[i], d[j])
        else:
            row = (size[i] * d[i] + size[j] * d[j]) / (size[i] + size[j])
        d[i, :] = row
        d[:, i] = row
        d[j, :] = np.inf
        d[:, j] = np.inf
        d[i, i] = np.inf
        size[i] += size[j]
        members[i].extend(members[j])
        members[j] = []
    return [sorted(m) for m in members if len(m) >= 2]


def _groups_of(labels: npt.NDArray[np.int64]) -> Groups:
    by_label: dict[int, list[int]] = {}
    for index, label in enumerate(labels.tolist()):
        by_label.setdefault(int(label), []).append(index)
    return [g for g in by_label.values() if len(g) >= 2]


__all__ = ["Groups", "agglomerate", "cluster", "cohesion", "components", "threshold_pairs"]
