"""The paper's baselines (Table 4): groupings without margins or diagnosis.

* Cosine τ: connected components of the graph "cosine similarity ≥ τ" over
  the same card embeddings Rift uses.
* Jaccard J: connected components of the graph "token-set Jaccard > J" over
  the same card text Layer 3 tokenises.

Both find groups; neither can say which group actually breaks retrieval.
Jaccard is computed with a sparse token matrix so it stays fast on large
catalogs (intersections are one sparse product).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import csr_matrix, triu

from cartograph.index.embedders.base import Vectors
from cartograph.rift.clustering import Groups, components, threshold_pairs


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
    matrix = csr_matrix(
        (np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n, len(vocabulary))
    )
    overlap = triu(matrix @ matrix.T, k=1).tocoo()
    sizes = np.asarray([len(t) for t in token_sets], dtype=np.float64)
    union = sizes[overlap.row] + sizes[overlap.col] - overlap.data
    keep = overlap.data / union > threshold
    return components(n, (overlap.row[keep].astype(np.intp), overlap.col[keep].astype(np.intp)))


__all__ = ["cosine_groups", "jaccard_groups"]
