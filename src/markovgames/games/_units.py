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

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["AffineRescaling", "IDENTITY_UNITS", "UNITS_BOUND"]

#: The bound on a game's units: ``1 / UNITS_BOUND <= scale <= UNITS_BOUND`` and
#: ``|offset| <= UNITS_BOUND``. Every number derived from the units is then finite: an original
#: payoff ``(r01 - offset) / scale`` is at most ``(1 + B) B``, an original return over ``H`` steps
#: ``(V01 - H offset) / scale`` at most ``H (1 + B) B`` and a gap ``H B``, about ``H 1e200``, far
#: inside float64 (1.8e308) for any horizon a game can have. Payoffs a hundred orders of magnitude
#: from 1, or apart, are not a game's units but an accident.
UNITS_BOUND = 1e100


def _number(key: str, value) -> float:
    """``value`` as a float within the bound of ``key`` (``scale`` or ``offset``); a ``ValueError``
    starting with ``key`` otherwise (an integer too large for a float included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{key}: expected a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        digits = len(str(abs(int(value))))
        raise ValueError(f"{key}: an integer of {digits} digits, beyond any float; at most {UNITS_BOUND:g}") from None
    if not math.isfinite(number):
        raise ValueError(f"{key}: expected a finite number, got {number!r}")
    if key == "scale" and not number > 0:
        raise ValueError(f"scale: expected a positive number, got {number!r}")
    if key == "scale" and not 1.0 / UNITS_BOUND <= number <= UNITS_BOUND:
        raise ValueError(
            f"scale: {number!r} is outside [{1.0 / UNITS_BOUND:g}, {UNITS_BOUND:g}], where every value and gap in the "
            "game's own units is a finite number"
        )
    if key == "offset" and not abs(number) <= UNITS_BOUND:
        raise ValueError(
            f"offset: {number!r} is outside [-{UNITS_BOUND:g}, {UNITS_BOUND:g}], where every value in the game's own "
            "units is a finite number"
        )
    return number


@dataclass(frozen=True)
class AffineRescaling:
    """``r01 = scale * r + offset`` with ``scale > 0``, common to all players and steps.

    Both are bounded (`UNITS_BOUND`), so that every value and gap in the original units is finite.
    """

    scale: float = 1.0
    offset: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _number("scale", self.scale))
        object.__setattr__(self, "offset", _number("offset", self.offset))

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

    def original_value(self, v01, horizon: float = 1):
        """A rescaled return over ``horizon`` steps -> original units (a discounted return: ``horizon = 1/(1-gamma)``)."""
        return (np.asarray(v01, dtype=np.float64) - horizon * self.offset) / self.scale

    def original_gap(self, gap01):
        """A rescaled gap (difference of returns) -> original units."""
        return np.asarray(gap01, dtype=np.float64) / self.scale


#: The map of a game given in ``[0, 1]``.
IDENTITY_UNITS = AffineRescaling()
