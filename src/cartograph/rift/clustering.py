"""Layer 1: density clustering of tool embeddings (paper §3.4, eq. 9–10).

Agglomerative clustering with scipy's ``linkage``/``fcluster`` and distance
threshold δ = 1 − θ_sim over cosine distance. Two things keep it cheap on big
catalogs without changing the answer:

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
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import squareform

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
    if n == 0 or len(rows) == 0:
        return []
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
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
    np.fill_diagonal(distances, 0.0)
    condensed = squareform(distances, checks=False)
    tree = linkage(condensed, method=method)
    labels = fcluster(tree, t=delta + _EPS, criterion="distance")
    for group in _groups_of(labels):
        yield [component[i] for i in group]


def _groups_of(labels: npt.NDArray[np.int32]) -> Groups:
    by_label: dict[int, list[int]] = {}
    for index, label in enumerate(labels.tolist()):
        by_label.setdefault(int(label), []).append(index)
    return [g for g in by_label.values() if len(g) >= 2]


__all__ = ["Groups", "cluster", "cohesion", "components", "threshold_pairs"]
