"""The floating-point precisions of a run: float64 (the reference) and float32 (NumPy only, so that
the command line's option choices need no JAX)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DTYPES"]

DTYPES: dict[str, type[np.floating[Any]]] = {"float64": np.float64, "float32": np.float32}
