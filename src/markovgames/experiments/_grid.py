"""Log-spaced grids of iteration counts: where curves are drawn and checkpoints are placed."""

from __future__ import annotations

import numpy as np

__all__ = ["log_grid"]


def log_grid(T: int, points_per_decade: int = 40) -> np.ndarray:
    """Roughly log-spaced integers in ``1..T``, always including ``T`` and every decade ``10^k <= T``.

    The decades are added exactly (``10**k`` in integers), so that ``T' = 1000`` is a point of the
    grid whatever ``T`` and the rounding of the log-spaced points.
    """
    grid = np.unique(np.round(np.logspace(0, np.log10(T), int(np.log10(T) * points_per_decade) + 2)).astype(np.int64))
    decades = [10**k for k in range(len(str(int(T)))) if 10**k <= T]
    return np.unique(np.concatenate([grid[(grid >= 1) & (grid <= T)], decades, [T]]).astype(np.int64))
