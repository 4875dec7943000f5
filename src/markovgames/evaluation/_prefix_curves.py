r"""Value and certified bounds of V-learning's output policy after every number of episodes (docs/vlearning.md).

The hidden index of a [`VisitChainPolicy`][markovgames.policies.VisitChainPolicy] starts uniformly on
``1..K`` and from index ``k`` only ever reaches episodes before ``k``: the output after ``K'``
episodes is the same chain started uniformly on ``1..K'``. So one backward pass over the index gives
every prefix: with :math:`V^k_h(s)` the value from index ``k`` (before the draw of step ``h``),

.. math:: V^k_h(s) = \mathrm{pull}_{h,s}\big(j \mapsto [(r_h + P_h V^j_{h+1})\pi^j_h](s)\big)(k),
          \qquad V(K') = \frac{1}{K'}\sum_{k \le K'} V^k_0(s_0),

and the same for the index-revealing certified bounds of docs/gaps.md (CCE:
:math:`B^k_h(s) = \max_b \mathrm{pull}_{h,s}([(r_h + P_h B_{h+1})\pi_{-i}](\cdot, b))(k)`; CE:
:math:`W^k_h(s) = \sum_a \max_b \mathrm{pull}_{h,s}(\pi_i(a)[(r_h + P_h W_{h+1})\pi_{-i}](\cdot, b))(k)`),
whose means over ``k <= K'`` bound the best deviations' values of the output after ``K'`` episodes.
Cost O(H K S |A| S) once, for all ``K'``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..games import MarkovGame
from ..policies import VisitChainPolicy
from ..policies._visit_chain import MAX_DENSE_ENTRIES
from ._common import check_policy, joint_expectation, others_expectation, step_factors

__all__ = ["PrefixCurves", "prefix_curves"]


@dataclass(frozen=True, eq=False)
class PrefixCurves:
    """Per prefix ``K'`` (``episodes``): the exact value and the certified bounds of the output policy.

    Attributes
    ----------
    episodes : ndarray (P,)
    value : ndarray (P, N)
        Exact value of every player at the initial state.
    certified_cce : ndarray (P, N)
        Certified (index-revealing) upper bound on each player's best CCE deviation value.
    certified_ce : ndarray (P, N)
        The same for the best strategy modification (CE).
    """

    episodes: np.ndarray
    value: np.ndarray
    certified_cce: np.ndarray
    certified_ce: np.ndarray

    @property
    def certified_cce_gap(self) -> np.ndarray:
        """``max_i (certified_cce_i - value_i)`` per prefix: an upper bound on the exact CCE gap."""
        return (self.certified_cce - self.value).max(axis=-1)

    @property
    def certified_ce_gap(self) -> np.ndarray:
        """``max_i (certified_ce_i - value_i)`` per prefix: an upper bound on the exact CE gap."""
        return (self.certified_ce - self.value).max(axis=-1)


def prefix_curves(game: MarkovGame, policy: VisitChainPolicy, prefixes=None) -> PrefixCurves:
    """Exact values and certified CCE/CE bounds of ``policy.prefix(K')`` for every ``K'`` in ``prefixes``.

    Parameters
    ----------
    game : MarkovGame
    policy : VisitChainPolicy
    prefixes : sequence of int, optional
        Numbers of episodes in ``1..K`` (default: all of ``1..K``).
    """
    if not isinstance(policy, VisitChainPolicy):
        raise TypeError(f"policy must be a VisitChainPolicy, got {type(policy).__name__}")
    check_policy(game, policy)
    K = policy.T
    if prefixes is None:
        ks = np.arange(1, K + 1)
    else:
        ks = np.asarray(prefixes)
        if ks.ndim != 1 or ks.size == 0 or ks.dtype.kind not in "iu" or ks.min() < 1 or ks.max() > K:
            raise ValueError(f"prefixes must be a non-empty list of integers in 1..{K}")
    n, num_s = game.num_players, game.num_states
    entries = K * num_s * game.num_joint_actions * num_s
    if entries > MAX_DENSE_ENTRIES:
        raise ValueError(
            f"prefix_curves needs arrays of {entries:,} entries (K={K} indices x S x joint actions x S), "
            f"above the limit {MAX_DENSE_ENTRIES:,}: evaluate a prefix (policy.prefix(K')), or a smaller game"
        )
    kernel = policy.kernel
    value = np.zeros((K, num_s, n))
    cce = np.zeros((n, K, num_s))
    ce = np.zeros((n, K, num_s))
    for h in range(game.horizon - 1, -1, -1):
        f = step_factors(policy, h)
        x = joint_expectation(np.moveaxis(game.rewards[h], 0, -1), f)  # (K, S, N)
        last = h + 1 == game.horizon
        if not last:
            moved = joint_expectation(game.transitions[h], f)  # (K, S, S')
            x = x + np.einsum("ksz,kzn->ksn", moved, value)
        new_cce, new_ce = np.empty_like(cce), np.empty_like(ce)
        for i in range(n):
            y_cce = others_expectation(game.rewards[h, i], f, i)  # (K, S, A_i)
            y_ce = y_cce.copy()
            if not last:
                pm = others_expectation(game.transitions[h], f, i)  # (K, S, A_i, S')
                y_cce = y_cce + np.einsum("ksbz,kz->ksb", pm, cce[i])
                y_ce = y_ce + np.einsum("ksbz,kz->ksb", pm, ce[i])
            new_cce[i] = kernel.pull_states(h, y_cce).max(axis=-1)
            e = f[i][..., :, None] * y_ce[..., None, :]  # (K, S, A, B): recommended a, played b
            new_ce[i] = kernel.pull_states(h, e).max(axis=-1).sum(axis=-1)
        value = kernel.pull_states(h, x)
        cce, ce = new_cce, new_ce
    s0 = game.initial_state

    def means(per_index: np.ndarray) -> np.ndarray:  # (K, N) -> (P, N): mean over k <= K'
        return np.cumsum(per_index, axis=0)[ks - 1] / ks[:, None]

    return PrefixCurves(
        episodes=ks.astype(np.int64),
        value=means(value[:, s0, :]),
        certified_cce=means(cce[:, :, s0].T),
        certified_ce=means(ce[:, :, s0].T),
    )
