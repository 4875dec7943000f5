r"""Exact value of an output policy (or of a Markov correlated policy) at the initial state.

For an [`IndexChainPolicy`][markovgames.policies.IndexChainPolicy] (docs/explanation.md, "The output policies"; docs/gaps.md) the value is the index
recursion :math:`V^t_h(s) = \sum_j \mu_t(j) [(r_h + P_h V^j_{h+1}) \pi^j_h](s)` evaluated at
``t = t_0``. Here it is computed *forward*: the joint law :math:`d_h(j, s)` of the index played at
step ``h`` and the state at step ``h`` starts as :math:`d_0 = \nu_1 \otimes \delta_{s_1}` (``nu_1``
the law of ``j_1``) and moves by

.. math:: d_{h+1}(\cdot, s') = \mathrm{push}\Big(\sum_s d_h(\cdot, s)\,[P_h \pi^{\cdot}_h](s, s')\Big),

so that :math:`V_i = \sum_h \sum_{j,s} d_h(j,s) [r_{h,i}\pi^j_h](s)`. Cost O(H T S |A| S) with the
O(T) kernel push of [`IndexKernel`][markovgames.policies.IndexKernel] — this scales to ``T = 10^5`` and beyond on small games.

For a [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy] ``sigma`` it is plain backward induction
:math:`V_h(s) = \sum_a \sigma_h(a|s) [r_h(s,a) + P_h(s,a) \cdot V_{h+1}]`.
"""

from __future__ import annotations

import numpy as np

from ..games import MarkovGame
from ..policies import IndexChainPolicy, IndexKernel, MarkovCorrelatedPolicy
from ._common import check_policy, joint_expectation, step_factors

__all__ = ["policy_value", "state_index_distributions"]


def state_index_distributions(game: MarkovGame, policy: IndexChainPolicy, kernel: IndexKernel | None = None):
    r"""Yield ``(h, d_h)`` for ``h = 0..H-1``: ``d_h[j-1, s] = P(j_h = j, s_h = s)`` under ``policy``.

    The index ``j_h`` is the one *played* at step ``h`` (docs/explanation.md, "The output policies").
    """
    kernel = policy.kernel if kernel is None else kernel
    d = np.zeros((policy.T, game.num_states))
    d[:, game.initial_state] = kernel.first_index_distribution_at(game.initial_state)
    for h in range(game.horizon):
        yield h, d
        if h + 1 < game.horizon:
            moved = joint_expectation(game.transitions[h], step_factors(policy, h))  # (T, S, S')
            d = kernel.push_states(h + 1, np.einsum("ts,tsz->tz", d, moved))


def policy_value(game: MarkovGame, policy) -> np.ndarray:
    r"""Exact expected total reward ``V_i`` of every player at ``s_1`` (docs/gaps.md, "Values").

    Parameters
    ----------
    game : MarkovGame
    policy : IndexChainPolicy or MarkovCorrelatedPolicy
        The output policy of Algorithm 3/4 (hidden index chain) or a Markov correlated policy.

    Returns
    -------
    numpy.ndarray, shape ``(N,)``
        :math:`V^{\pi}_{1,i}(s_1)` for every player ``i``.

    Notes
    -----
    Index-chain policies: forward recursion on the law of (played index, state), O(H T S |A| S)
    time and O(T S) memory besides one step of policies; see the module docstring.
    """
    check_policy(game, policy)
    if isinstance(policy, MarkovCorrelatedPolicy):
        return _markov_value(game, policy)[:, game.initial_state].copy()
    total = np.zeros(game.num_players)
    for h, d in state_index_distributions(game, policy):
        # Rewards with the player axis moved last: (S, A..., N) -> expectation (T, S, N).
        rew = joint_expectation(np.moveaxis(game.rewards[h], 0, -1), step_factors(policy, h))
        total += np.einsum("ts,tsn->n", d, rew)
    return total


def _markov_value(game: MarkovGame, policy: MarkovCorrelatedPolicy) -> np.ndarray:
    """``V_0(s)`` for every player and state, shape ``(N, S)``, by backward induction."""
    n, num_s = game.num_players, game.num_states
    value = np.zeros((n, num_s))
    for h in range(game.horizon - 1, -1, -1):
        q = game.rewards[h] + np.tensordot(game.transitions[h], value, axes=([-1], [1])).transpose(
            (-1,) + tuple(range(game.transitions[h].ndim - 1))
        )  # (N, S, A...)
        joint = policy.joint[h].reshape(num_s, -1)
        value = np.einsum("sk,nsk->ns", joint, q.reshape(n, num_s, -1))
    return value
