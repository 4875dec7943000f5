r"""The Shapley value of a two-player constant-sum discounted game: value iteration over per-state LPs.

Shapley (1953) showed that the value ``V*`` of a two-player zero-sum discounted game is the unique
fixed point of the operator

.. math:: (\mathcal{T} V)(s) = \operatorname{val}\big(r_0(s, \cdot, \cdot) + \gamma \textstyle\sum_{s'} P(s' \mid s, \cdot, \cdot) V(s')\big),

where ``val(M) = max_x min_y x^T M y`` is the value of the matrix game ``M`` (an ``A_0 x A_1``
matrix), a ``gamma``-contraction in the sup norm. `shapley_value` iterates it from ``V = 0``, each
``val`` by one linear program (HiGHS, through ``scipy.optimize.linprog``: ``max v`` subject to
``x^T M >= v``, ``x`` in the simplex), and stops when ``gamma / (1-gamma) ||V_{k+1} - V_k||_inf <=
tolerance``: the returned values are then within ``tolerance`` of ``V*`` (Puterman 1994, Section
6.3; the LPs' own tolerance, about ``1e-9`` relative in HiGHS's defaults, adds to it). The
stationary policies returned are the matrix games' optimal strategies at the final values (the
column player's from its own LP); their Nash gap is at most ``2 gamma / (1-gamma)`` times the
values' error plus the LPs' (Shapley 1953; the evaluation tests check it). A constant-sum game
``r_0 + r_1 = c`` is solved as the zero-sum game of player 0; player 1's value is ``c/(1-gamma) - V*``.

It is the control for the learning dynamics in discounted zero-sum games: the iterates'
values should approach it, and it is the equilibrium value the papers' duality gaps measure from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from ..games import DiscountedMarkovGame

__all__ = ["ShapleySolution", "shapley_value", "matrix_game_value"]

_MAX_ITERATIONS = 10_000_000


@dataclass(frozen=True, eq=False)
class ShapleySolution:
    """The Shapley value and a stationary equilibrium of a two-player constant-sum discounted game.

    Attributes
    ----------
    state_values : ndarray (2, S)
        ``V*_i(s)`` for each player (player 1's is ``c/(1-gamma) - V*_0``).
    value : ndarray (2,)
        At the initial distribution.
    policies : tuple of two ndarray
        Stationary equilibrium policies ``(S, A_0)`` and ``(S, A_1)``.
    iterations : int
        Value-iteration sweeps.
    error_bound : float
        The bound ``gamma / (1-gamma) ||V_K - V_{K-1}||_inf`` on the values' error (before the LPs' tolerance).
    """

    state_values: np.ndarray
    value: np.ndarray
    policies: tuple[np.ndarray, np.ndarray]
    iterations: int
    error_bound: float


def matrix_game_value(matrix: np.ndarray) -> tuple[float, np.ndarray]:
    """``val(M)`` and an optimal strategy of the row (maximising) player, by one LP."""
    rows, cols = matrix.shape
    # Variables (x_0 .. x_{rows-1}, v): minimise -v s.t. v - x^T M[:, j] <= 0, sum x = 1, x >= 0.
    c = np.zeros(rows + 1)
    c[-1] = -1.0
    a_ub = np.hstack([-matrix.T, np.ones((cols, 1))])
    a_eq = np.hstack([np.ones((1, rows)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * rows + [(None, None)]
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(cols), A_eq=a_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if res.status != 0:  # a matrix game always has a value: only a numerical failure lands here
        raise RuntimeError(f"the matrix game LP failed: {res.message}")
    x = np.maximum(res.x[:rows], 0.0)
    return float(res.x[-1]), x / x.sum()


def shapley_value(game: DiscountedMarkovGame, *, tolerance: float = 1e-10) -> ShapleySolution:
    """The Shapley value of the two-player constant-sum discounted ``game`` (module docstring)."""
    if not isinstance(game, DiscountedMarkovGame):
        raise TypeError(f"game must be a DiscountedMarkovGame, got {type(game).__name__}")
    if game.num_players != 2 or not game.is_constant_sum:
        raise ValueError(
            f"game {game.name!r}: the Shapley value is defined for two-player constant-sum games "
            f"(N = {game.num_players}, constant-sum: {game.is_constant_sum})"
        )
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance: expected a positive number, got {tolerance!r}")
    gamma = game.discount
    rewards = game.rewards[0]  # (S, A_0, A_1)
    kernel = game.transitions  # (S, A_0, A_1, S)
    values = np.zeros(game.num_states)
    iterations, bound = 0, np.inf
    while bound > tolerance:
        if iterations == _MAX_ITERATIONS:
            raise RuntimeError(f"Shapley value iteration did not reach tolerance {tolerance:g}")
        stage = rewards + gamma * kernel @ values
        updated = np.array([matrix_game_value(stage[s])[0] for s in range(game.num_states)])
        bound = gamma / (1.0 - gamma) * float(np.abs(updated - values).max()) if gamma > 0 else 0.0
        values = updated
        iterations += 1
    stage = rewards + gamma * kernel @ values
    row = np.stack([matrix_game_value(stage[s])[1] for s in range(game.num_states)])
    # The column player maximises its own payoff -M^T (the same LP, transposed and negated).
    col = np.stack([matrix_game_value(-stage[s].T)[1] for s in range(game.num_states)])
    constant = float(game.rewards.sum(axis=0).ravel()[0])
    state_values = np.stack([values, constant / (1.0 - gamma) - values])
    return ShapleySolution(
        state_values=state_values,
        value=state_values @ game.initial_distribution,
        policies=(row, col),
        iterations=iterations,
        error_bound=bound,
    )
