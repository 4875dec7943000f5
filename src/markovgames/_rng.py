"""Random number generators: every random choice takes a seed or a ``numpy.random.Generator``."""

from __future__ import annotations

import numpy as np

__all__ = ["as_generator"]


def as_generator(seed_or_rng) -> np.random.Generator:
    """A ``Generator`` from an int seed, a ``SeedSequence`` or a ``Generator`` (passed through)."""
    if isinstance(seed_or_rng, np.random.Generator):
        return seed_or_rng
    return np.random.default_rng(seed_or_rng)
