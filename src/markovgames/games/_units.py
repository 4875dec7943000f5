"""A game's own units: the affine map from its original payoffs to the ``[0, 1]`` rewards it runs on.

``markovgames`` requires rewards in ``[0, 1]``. A game with other payoffs (a textbook matrix
game, an OpenSpiel game) is rescaled by one increasing affine map common to all players and all
steps,

    ``r01 = scale * r + offset``,  ``scale > 0``,

which changes no best response and no (coarse) correlated or Nash equilibrium. Over an episode of
``H`` steps the returns map as ``V01 = scale * V + H * offset`` (`AffineRescaling.value`), and
every gap (a difference of two returns) as ``gap01 = scale * gap``. A
[`MarkovGame`][markovgames.games.MarkovGame] keeps its map (``units``; the identity for a game
given in ``[0, 1]``), its files store it, and runs and evaluations report values and gaps in the
original units beside the ``[0, 1]`` ones (`AffineRescaling.original_value`,
`AffineRescaling.original_gap`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["AffineRescaling", "IDENTITY_UNITS"]


@dataclass(frozen=True)
class AffineRescaling:
    """``r01 = scale * r + offset`` with ``scale > 0``, common to all players and steps."""

    scale: float = 1.0
    offset: float = 0.0

    def __post_init__(self) -> None:
        for key in ("scale", "offset"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ValueError(f"{key}: expected a number, got {value!r}")
        if not (np.isfinite(self.scale) and self.scale > 0 and np.isfinite(self.offset)):
            raise ValueError(f"need a finite scale > 0 and a finite offset, got scale={self.scale}, offset={self.offset}")
        object.__setattr__(self, "scale", float(self.scale))
        object.__setattr__(self, "offset", float(self.offset))

    @property
    def is_identity(self) -> bool:
        return self.scale == 1.0 and self.offset == 0.0

    def apply(self, x):
        """Original units -> ``[0, 1]`` units (per step)."""
        return self.scale * np.asarray(x, dtype=np.float64) + self.offset

    def invert(self, y):
        """``[0, 1]`` units -> original units (per step)."""
        return (np.asarray(y, dtype=np.float64) - self.offset) / self.scale

    def value(self, v, horizon: int = 1):
        """An original-units return over ``horizon`` steps -> the rescaled game's return."""
        return self.scale * np.asarray(v, dtype=np.float64) + horizon * self.offset

    def original_value(self, v01, horizon: int = 1):
        """A rescaled return over ``horizon`` steps -> original units."""
        return (np.asarray(v01, dtype=np.float64) - horizon * self.offset) / self.scale

    def original_gap(self, gap01):
        """A rescaled gap (difference of returns) -> original units."""
        return np.asarray(gap01, dtype=np.float64) / self.scale


#: The map of a game given in ``[0, 1]``.
IDENTITY_UNITS = AffineRescaling()
