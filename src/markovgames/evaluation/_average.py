r"""Average iterates and the duality gap: the measures of the two-player zero-sum literature.

The results of Zhang, Liu, Wang, Xiong, Li and Bai (NeurIPS 2022) and Yang and Ma (ICLR 2023)
are about the *state-wise weighted average* of the iterates, a product Markov policy: each
player's strategies at each step and state averaged with the weights of the smooth value update,

.. math:: \bar\pi^T_{h,i}(\cdot \mid s) = \sum_{t=1}^{T} \alpha_T^t\, \pi^t_{h,i}(\cdot \mid s), \qquad
          \alpha_T^t = \alpha_t \prod_{j=t+1}^{T} (1 - \alpha_j), \quad \alpha_t = \frac{H+1}{H+t}.

[`average_iterate`][markovgames.evaluation.average_iterate] computes it from a trajectory, with
these weights (``"paper"``), uniform ones (the textbook average), linear ones, the stage-based
update's (the last complete stage's mean) or any weights given
(`markovgames._schedules.average_weights` states each). The compiled loop carries the same
average without the trajectory ([`run`][markovgames.dynamics.run]'s ``weighted_average``).

[`duality_gap`][markovgames.evaluation.duality_gap] is the zero-sum measure of a product policy
``(x, y)``: :math:`\max_{x'} V_0(x', y) - \min_{y'} V_0(x, y')`, which in a two-player
constant-sum game (``r_0 + r_1 = c``) is the sum of the two players' best-response gains, each
exact by backward induction ([`nash_gap`][markovgames.evaluation.nash_gap]); it is at least the
Nash gap and at most twice it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._schedules import AVERAGINGS, average_weights
from ..games import DiscountedMarkovGame, MarkovGame
from ._discounted import discounted_duality_gap
from ._nash import nash_gap

__all__ = ["average_iterate", "duality_gap", "AVERAGING_WEIGHTS"]

#: The named weights of `average_iterate`.
AVERAGING_WEIGHTS = tuple(AVERAGINGS)

#: Rows of a trajectory averaged at a time (bounded temporaries for long trajectories).
_ROWS_PER_BLOCK = 4096

#: How far from 1 weights given as an array may sum.
_WEIGHT_SUM_TOLERANCE = 1e-9


def average_iterate(
    trajectory: Sequence[np.ndarray], weights: str | Sequence[float] | np.ndarray = "paper", *, horizon: int | None = None
) -> tuple[np.ndarray, ...]:
    r"""The state-wise weighted average :math:`\sum_t w_t \pi^t` of a trajectory of product policies.

    Parameters
    ----------
    trajectory : sequence of ndarray
        Per player an array ``(T, ...)`` whose row ``t - 1`` is the iterate :math:`\pi^t`: the
        ``(T, H, S, A_i)`` policies of a finite-horizon run (`RunResult.policies`), or any other
        per-iteration strategies (``(T, S, A_i)`` stationary ones).
    weights : str or array
        ``"paper"`` (the smooth update's :math:`\alpha_T^t` with :math:`\alpha_t = (H+1)/(H+t)`:
        Zhang et al. 2022, Yang and Ma 2023), ``"uniform"`` (``1/T``), ``"linear"``
        (``2t/(T(T+1))``), ``"stage"`` (the stage-based update's: ``1/L`` on the last stage
        complete after ``T`` iterations), or an array of ``T`` non-negative weights summing to 1.
    horizon : int, optional
        ``H`` of ``"paper"`` and ``"stage"``; by default axis 1 of a four-dimensional trajectory
        (``(T, H, S, A_i)``). Another shape needs it given.

    Returns
    -------
    tuple of ndarray
        Per player the average, of the shape of one row (float64).

    Raises
    ------
    ValueError
        Players with different numbers of iterates, an empty or non-finite trajectory, an unknown
        name, or weights of the wrong length, negative, not finite or not summing to 1.
    """
    arrays = [np.asarray(p) for p in trajectory] if not isinstance(trajectory, np.ndarray) else None
    if not arrays:
        raise ValueError("trajectory: expected a sequence of arrays (T, ...), one per player")
    T = arrays[0].shape[0] if arrays[0].ndim else 0
    for i, p in enumerate(arrays):
        if p.ndim < 2 or p.shape[0] != T or T == 0:
            raise ValueError(
                f"trajectory[{i}]: expected an array (T, ...) with T = {T or 'at least 1'} rows, got shape {p.shape}"
            )
    w = _weights(weights, T, arrays[0], horizon)
    out = []
    for i, p in enumerate(arrays):
        total = np.zeros(p.shape[1:], dtype=np.float64)
        for lo in range(0, T, _ROWS_PER_BLOCK):
            block = np.asarray(p[lo : lo + _ROWS_PER_BLOCK], dtype=np.float64)
            if not np.all(np.isfinite(block)):
                raise ValueError(f"trajectory[{i}]: holds values that are not finite (rows {lo + 1}..{lo + len(block)})")
            total += np.tensordot(w[lo : lo + len(block)], block, axes=(0, 0))
        out.append(total)
    return tuple(out)


def _weights(weights, T: int, first: np.ndarray, horizon: int | None) -> np.ndarray:
    """The ``(T,)`` weights ``weights`` names or gives, checked."""
    if isinstance(weights, str):
        if weights not in AVERAGINGS:
            raise ValueError(f"weights: unknown averaging {weights!r}; choose one of {', '.join(AVERAGINGS)} or give an array")
        if horizon is None:
            if first.ndim != 4:
                raise ValueError(
                    f"weights {weights!r}: give horizon= (the trajectory's rows have shape {first.shape[1:]}, not (H, S, A_i))"
                )
            horizon = int(first.shape[1])
        if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ValueError(f"horizon: expected a positive integer, got {horizon!r}")
        return average_weights(AVERAGINGS[weights], T, int(horizon))
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (T,):
        raise ValueError(f"weights: expected {T} weights (one per iterate), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights: must be finite and non-negative")
    if abs(float(w.sum()) - 1.0) > _WEIGHT_SUM_TOLERANCE:
        raise ValueError(f"weights: must sum to 1, got {float(w.sum())!r}")
    return w


def duality_gap(game: MarkovGame | DiscountedMarkovGame, policies: Sequence[np.ndarray]) -> float:
    r"""The duality gap :math:`\max_{x'} V_0(x', y) - \min_{y'} V_0(x, y')` of the product policy
    ``policies = (x, y)`` in a two-player constant-sum game (at ``s_1``, or at the initial
    distribution of a discounted game).

    With ``r_0 + r_1 = c`` at every step, :math:`\min_{y'} V_0(x, y') = cH - \max_{y'} V_1(x, y')`
    and :math:`V_0 + V_1 = cH`, so the gap is the sum of the players' best-response gains
    :math:`\sum_i (V^\dagger_i - V_i)`: exact, by backward induction
    ([`nash_gap`][markovgames.evaluation.nash_gap]; a discounted game's by
    [`discounted_duality_gap`][markovgames.evaluation.discounted_duality_gap]). Non-negative, at
    least the Nash gap and at most twice it.

    Raises
    ------
    ValueError
        A game with other than two players or whose rewards are not constant-sum (the gap has no
        meaning there: use `nash_gap`), or policies that are not a product policy of the game.
    """
    if isinstance(game, DiscountedMarkovGame):
        return discounted_duality_gap(game, policies)
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame or a DiscountedMarkovGame, got {type(game).__name__}")
    if game.num_players != 2 or not game.is_constant_sum:
        raise ValueError(
            f"game {game.name!r}: the duality gap is defined for two-player constant-sum games "
            f"(N = {game.num_players}, constant-sum: {game.is_constant_sum}); use nash_gap"
        )
    return float(np.sum(nash_gap(game, policies).per_player))
