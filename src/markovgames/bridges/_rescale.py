"""The affine map that brings payoffs or rewards into ``[0, 1]`` (shared by the bridges).

``markovgames`` requires rewards in ``[0, 1]``. A game with other payoffs is rescaled by one
increasing affine map common to all players and all steps,

    ``r01 = scale * r + offset``,  ``scale > 0``,

which changes no best response and no (coarse) correlated or Nash equilibrium. Over an episode of
``H`` steps the returns map as ``V01 = scale * V + H * offset`` (`AffineRescaling.value`),
and every gap (a difference of two returns) as ``gap01 = scale * gap``. The map is
`markovgames.games.AffineRescaling`; the games the bridges make keep it (``MarkovGame.units``).
"""

from __future__ import annotations

import numpy as np

from ..games._units import AffineRescaling

__all__ = ["AffineRescaling", "Rescaled", "fit_rescaling", "to_unit_interval"]


class Rescaled:
    """A game brought into ``[0, 1]`` by ``rescaling``: its ``scale`` and ``offset`` at hand."""

    rescaling: AffineRescaling

    @property
    def scale(self) -> float:
        return self.rescaling.scale

    @property
    def offset(self) -> float:
        return self.rescaling.offset


def fit_rescaling(values, bounds="auto") -> AffineRescaling:
    """The affine map for ``values`` (any array of payoffs or per-step rewards).

    Parameters
    ----------
    values : array_like
    bounds : ``"auto"``, ``"minmax"``, ``None`` or ``(lo, hi)``
        ``"auto"`` (default): the identity when every value is already in ``[0, 1]``, else
        ``"minmax"``. ``"minmax"``: ``lo = min(values)``, ``hi = max(values)``, and
        ``r01 = (r - lo) / (hi - lo)`` (a constant game maps to 0). ``None``: the identity (values
        outside ``[0, 1]`` then fail when the game is built). ``(lo, hi)``: that interval, which
        must contain every value (useful to keep a textbook scale, e.g. ``(-10, 1)``).
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError("payoffs must be finite")
    if bounds is None:
        return AffineRescaling()
    if isinstance(bounds, str):
        if bounds not in ("auto", "minmax"):
            raise ValueError(f"bounds must be 'auto', 'minmax', None or (lo, hi), got {bounds!r}")
        if arr.size == 0:
            return AffineRescaling()
        lo, hi = float(arr.min()), float(arr.max())
        if bounds == "auto" and lo >= 0.0 and hi <= 1.0:
            return AffineRescaling()
    else:
        try:
            lo, hi = (float(b) for b in bounds)
        except (TypeError, ValueError):
            raise ValueError(f"bounds must be 'auto', 'minmax', None or a pair of numbers (lo, hi), got {bounds!r}") from None
        if not hi > lo:
            raise ValueError(f"bounds: need lo < hi, got ({lo}, {hi})")
        if arr.size and (arr.min() < lo or arr.max() > hi):
            raise ValueError(f"bounds ({lo}, {hi}) do not contain every value (range [{arr.min()}, {arr.max()}])")
    if hi == lo:
        return AffineRescaling(1.0, 0.0 - lo + 0.0)
    scale = 1.0 / (hi - lo)
    return AffineRescaling(scale, 0.0 - lo * scale + 0.0)


def to_unit_interval(values, rescaling: AffineRescaling, *, what: str = "payoffs") -> np.ndarray:
    """``rescaling.apply(values)``, with round-off excursions (at most 1e-12) clipped into ``[0, 1]``."""
    out = rescaling.apply(values)
    if out.size and (out.min() < -1e-12 or out.max() > 1.0 + 1e-12):
        raise ValueError(
            f"{what}: the rescaled values span [{float(out.min()):.6g}, {float(out.max()):.6g}], not inside [0, 1]; "
            "pass bounds that contain every value (or bounds='minmax')"
        )
    return np.clip(out, 0.0, 1.0)
