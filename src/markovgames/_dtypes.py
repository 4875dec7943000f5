"""The floating-point precisions of a run: float64 (the reference) and float32 (NumPy only, so that
the command line's option choices need no JAX)."""

from __future__ import annotations

import numpy as np

__all__ = ["DTYPES"]

DTYPES = {"float64": np.float64, "float32": np.float32}
