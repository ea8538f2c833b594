"""A 2-D map of the catalog: PCA of the card embeddings.

PCA is linear and deterministic, so the same catalog always gives the same
picture and distances on the map mean something (unlike t-SNE/UMAP, which
also need dependencies we do not ship). Tools whose vectors coincide (the
identical-description failure) would be one dot; they are fanned out on a
small ring so the map still shows one point per tool and a visible pile-up.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt

from cartograph.index.embedders.base import Vectors

Coordinates = npt.NDArray[np.float64]
_ITERATIONS: Final = 60
_RING_RADIUS: Final = 0.012
"""Radius of a pile-up ring, as a share of the map's larger extent."""


def pca_2d(vectors: Vectors) -> Coordinates:
    """(n, 2) coordinates on the two principal axes, each normalised to [0, 1]."""
    n = len(vectors)
    if n == 0:
        return np.zeros((0, 2))
    data = vectors.astype(np.float64)
    centred = data - data.mean(axis=0)
    axes = _principal_axes(centred)
    coords = _orient(centred @ axes, axes)
    return _fan_out(_unit_box(coords))


def _principal_axes(centred: Coordinates) -> Coordinates:
    """The top-2 principal axes by subspace iteration, as (d, 2) orthonormal columns.

    A full eigendecomposition (LAPACK) costs seconds on a busy two-core
    machine even for a 384×384 covariance; a few dozen products with the
    data give the same two axes to map precision, deterministically.
    """
    q = np.random.default_rng(0).standard_normal((centred.shape[1], 2))
    for _ in range(_ITERATIONS):
        q = _orthonormal(centred.T @ (centred @ q))
    projected = centred @ q
    _, rotation = np.linalg.eigh(projected.T @ projected)  # 2×2: order the two axes
    axes: Coordinates = q @ rotation[:, ::-1]
    return axes


def _orthonormal(q: Coordinates) -> Coordinates:
    """Gram–Schmidt on two columns; a vanished column is replaced by a fixed unit vector."""
    out = q.copy()
    for j in range(2):
        for k in range(j):
            out[:, j] -= (out[:, k] @ out[:, j]) * out[:, k]
        norm = float(np.linalg.norm(out[:, j]))
        if norm < 1e-12:
            out[:, j] = 0.0
            out[j % len(out), j] = 1.0
            for k in range(j):
                out[:, j] -= (out[:, k] @ out[:, j]) * out[:, k]
            norm = float(np.linalg.norm(out[:, j])) or 1.0
        out[:, j] /= norm
    return out


def _orient(coords: Coordinates, axes: Coordinates) -> Coordinates:
    """Eigenvector signs are arbitrary; fix them so reruns draw the same map."""
    for j in range(coords.shape[1]):
        pivot = int(np.argmax(np.abs(axes[:, j])))
        if axes[pivot, j] < 0:
            coords[:, j] = -coords[:, j]
    return coords


def _unit_box(coords: Coordinates) -> Coordinates:
    low = coords.min(axis=0)
    span = coords.max(axis=0) - low
    span[span < 1e-12] = 1.0
    scaled: Coordinates = (coords - low) / span
    return scaled


def _fan_out(coords: Coordinates) -> Coordinates:
    rounded = np.round(coords, 6)
    piles: dict[tuple[float, float], list[int]] = {}
    for index, (x, y) in enumerate(rounded.tolist()):
        piles.setdefault((x, y), []).append(index)
    out = coords.copy()
    for members in piles.values():
        if len(members) < 2:
            continue
        radius = _RING_RADIUS * (1.0 + len(members) / 24.0)
        for k, index in enumerate(members):
            angle = 2.0 * math.pi * k / len(members)
            out[index, 0] += radius * math.cos(angle)
            out[index, 1] += radius * math.sin(angle)
    return out


__all__ = ["Coordinates", "pca_2d"]
