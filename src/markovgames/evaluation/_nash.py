r"""The exact Nash gap of a product Markov policy: each player's best response to the others.

A *product Markov policy* :math:`\pi = (\pi_0, \dots, \pi_{N-1})` has every player ``i`` draw its
action independently from :math:`\pi_{h,i}(\cdot \mid s)` at step ``h`` in state ``s``: no common
randomness and no memory (the iterates :math:`\pi^t` of the learning dynamics are such policies).
Its value solves the backward induction

.. math:: V^\pi_{h,i}(s) = \sum_a \prod_k \pi_{h,k}(a_k|s)\,\big[r_{h,i}(s,a) + P_h(s,a)\cdot V^\pi_{h+1,i}\big],
          \qquad V^\pi_{H,i} = 0.

Against the others' policy :math:`\pi_{-i}` player ``i`` faces a finite-horizon MDP (the others
neither remember nor correlate), so a deterministic Markov policy is a best response among *all*
its policies, history-dependent and randomised ones included, and backward induction finds it:

.. math:: V^\dagger_{h,i}(s) = \max_b \sum_{a_{-i}} \pi_{h,-i}(a_{-i}|s)\,\big[r_{h,i}(s,b,a_{-i})
          + P_h(s,b,a_{-i})\cdot V^\dagger_{h+1,i}\big].

The Nash gap is :math:`\max_i \big(V^\dagger_{1,i}(s_1) - V^\pi_{1,i}(s_1)\big) \ge 0`; it is 0 exactly
at a Markov Nash equilibrium (Mao et al. 2024, Section 2, with the deviation set of all policies
of player ``i``). A product policy is also a (correlated) policy whose recommendations carry no
information, so its CCE gap and its CE gap equal this gap. Cost O(N H S |A| (S + 1)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..games import MarkovGame
from ._cce import MarkovDeviation
from ._common import check_product_policy, joint_expectation, others_expectation

__all__ = ["NashGapResult", "nash_gap"]


@dataclass(frozen=True, eq=False)
class NashGapResult:
    r"""The exact Nash gap of a product Markov policy.

    Attributes
    ----------
    gap : float
        :math:`\max_i` ``per_player[i]`` (``>= 0`` up to rounding).
    per_player : ndarray (N,)
        ``best_response_value - value``.
    value : ndarray (N,)
        :math:`V^\pi_{1,i}(s_1)`.
    best_response_value : ndarray (N,)
        :math:`V^{\dagger,\pi_{-i}}_{1,i}(s_1)`, the value of player ``i``'s best response.
    best_responses : tuple of ndarray
        Per player ``i`` a deterministic Markov best response to :math:`\pi_{-i}`, as a policy array
        ``(H, S, A_i)`` of 0s and 1s (it can replace ``policies[i]``).
    """

    gap: float
    per_player: np.ndarray
    value: np.ndarray
    best_response_value: np.ndarray
    best_responses: tuple[np.ndarray, ...]

    @property
    def player(self) -> int:
        """The player with the largest gap."""
        return int(np.argmax(self.per_player))

    def deviation(self, player: int) -> MarkovDeviation:
        """Player ``player``'s best response as a [`MarkovDeviation`][markovgames.evaluation.MarkovDeviation] (for sampling)."""
        return MarkovDeviation(int(player), np.argmax(self.best_responses[int(player)], axis=-1))


def nash_gap(game: MarkovGame, policies: Sequence[np.ndarray]) -> NashGapResult:
    r"""The exact Nash gap at ``s_1`` of the product Markov policy ``policies``, with best responses.

    Parameters
    ----------
    game : MarkovGame
    policies : sequence of ndarray
        Per player ``i`` an array ``(H, S, A_i)``: ``policies[i][h, s]`` is the distribution of
        player ``i``'s action at step ``h`` in state ``s``. Checked by
        [`check_product_policy`][markovgames.evaluation.check_product_policy] (shapes, finite entries, rows on the
        simplex within `DISTRIBUTION_TOLERANCE`).

    Returns
    -------
    NashGapResult

    Raises
    ------
    TypeError, ValueError
        When ``policies`` is not a product Markov policy of ``game``'s shape.

    Notes
    -----
    Backward induction for the value and for each player's best response (see the module
    docstring); the others' policies are contracted player by player, never formed as a joint
    distribution.
    """
    pols = check_product_policy(game, policies)
    n, horizon, num_s = game.num_players, game.horizon, game.num_states
    value = np.zeros((n, num_s))
    best = np.zeros((n, num_s))
    tables = np.zeros((n, horizon, num_s), dtype=np.int64)
    for h in range(horizon - 1, -1, -1):
        factors = [p[h][None] for p in pols]  # (1, S, A_k): one "index"
        step = game.transitions[h]
        for i in range(n):
            q_value = game.rewards[h, i] + step @ value[i]  # (S, A...)
            q_best = game.rewards[h, i] + step @ best[i]
            value[i] = joint_expectation(q_value, factors)[0]
            m = others_expectation(q_best, factors, i)[0]  # (S, A_i)
            tables[i, h] = np.argmax(m, axis=-1)
            best[i] = m.max(axis=-1)
    s1 = game.initial_state
    v, br = value[:, s1].copy(), best[:, s1].copy()
    per_player = br - v
    return NashGapResult(
        gap=float(per_player.max()),
        per_player=per_player,
        value=v,
        best_response_value=br,
        best_responses=tuple(_one_hot(tables[i], game.num_actions[i]) for i in range(n)),
    )


def _one_hot(table: np.ndarray, num_actions: int) -> np.ndarray:
    out = np.eye(num_actions)[table]
    out.setflags(write=False)
    return out
