"""Percentile bootstrap intervals over queries.

With ~100 queries a point estimate alone overstates what is known; each
metric is reported with a 95 % interval from resampling queries. The seed is
fixed so the table is reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

DEFAULT_RESAMPLES: Final = 2000
DEFAULT_SEED: Final = 20240601


def bootstrap_interval(
    values: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """The percentile interval of the mean of ``values`` (empty input: (0, 0))."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return (float(low), float(high))
