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
_RING_RADIUS: Final = 0.012
"""Radius of a pile-up ring, as a share of the map's larger extent."""


def pca_2d(vectors: Vectors) -> Coordinates:
    """(n, 2) coordinates on the two principal axes, each normalised to [0, 1]."""
    n = len(vectors)
    if n == 0:
        return np.zeros((0, 2))
    centred = vectors.astype(np.float64) - vectors.astype(np.float64).mean(axis=0)
    covariance = centred.T @ centred
    values, axes = np.linalg.eigh(covariance)
    top = axes[:, np.argsort(values)[::-1][:2]]
    if top.shape[1] < 2:
        top = np.pad(top, ((0, 0), (0, 2 - top.shape[1])))
    coords = centred @ top
    coords = _orient(coords, top)
    return _fan_out(_unit_box(coords))


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
