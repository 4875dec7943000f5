r"""Predictive regret matching+ (PRM+; Farina, Kroer and Sandholm, AAAI 2021), weighted.

With utilities (the paper states it with losses), PRM+ keeps a nonnegative cumulative regret
vector :math:`R` and plays

.. math:: \theta^t = \big[R^{t-1} + m^t - \langle m^t, x^{t-1}\rangle \mathbf 1\big]^+, \qquad
          x^t = \theta^t / \|\theta^t\|_1 \quad(\text{uniform if } \theta^t = 0),

then observes :math:`u^t` and updates :math:`R^t = [R^{t-1} + u^t - \langle u^t, x^t\rangle\mathbf 1]^+`,
where :math:`m^t` is the prediction of :math:`u^t` (the last utility when optimistic, ``0``
otherwise: plain RM+, Tammelin 2014) and :math:`x^{t-1}` the strategy played last.

**Fed the value update's weights.** The smooth value update weighs iteration ``j`` by
:math:`w_j` (Algorithm 1's OFTRL weights); the weighted regret is
:math:`R^t = [R^{t-1} + w_t r^t]^+` with :math:`r^t = u^t - \langle u^t, x^t\rangle\mathbf 1`, and the
prediction enters as :math:`w_t (m^t - \langle m^t, x^{t-1}\rangle\mathbf 1)`. Positive scaling
commutes with :math:`[\cdot]^+` and with the normalisation, so the learner keeps
:math:`\tilde R^t = R^t / w_t = [\rho_t \tilde R^{t-1} + r^t]^+` (``decay`` :math:`\rho_t = w_{t-1}/w_t`)
and plays :math:`[\rho_t \tilde R^{t-1} + m^t - \langle m^t, x^{t-1}\rangle\mathbf 1]^+` normalised:
the same strategies as the raw weighted sums, which overflow for large ``H``. The stage-based
update feeds ``decay = 1`` (unweighted PRM+, restarted at every stage).

Every regret vector :math:`u - \langle u, x\rangle\mathbf 1` is formed as
:math:`\sum_b x_b (u_a - u_b)` (`regret_vector`, utilities within 16 machine epsilons of each other
taken as a tie): equal in exact arithmetic, and exactly 0 where the utilities tie, so that a
regret the rule makes 0 is never a rounded ``1e-16``.

Regret matching is invariant to the scale of the utilities, so the learning rate ``eta`` has no
effect on it: every ``eta`` gives the same run.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._small_axes import exact_quotient, materialized, regret_vector
from ._learner import Learner

__all__ = ["RegretMatchingState", "predictive_regret_matching_plus"]


class RegretMatchingState(NamedTuple):
    """State of PRM+: the normalised cumulative regret :math:`\\tilde R` (nonnegative) and the
    strategy :math:`x^{t-1}` played last (uniform before the first play), both of a strategy's shape."""

    regret: jax.Array
    last_strategy: jax.Array


def predictive_regret_matching_plus(axis: int = -1) -> Learner:
    """Predictive regret matching+ with the value update's weights (see the module docstring).

    ``axis`` is the action axis (negative); the other axes are independent copies.
    """

    def regret(u, x):
        # u - <u, x> 1 as pairwise differences (`regret_vector`): tied utilities give exactly 0,
        # so the rule's zero regret (uniform play) is never a rounded 1e-16 (pure play).
        return regret_vector(u, x, axis)

    def init(shape, dtype=jnp.float64) -> RegretMatchingState:
        return RegretMatchingState(jnp.zeros(shape, dtype), jnp.full(shape, 1.0 / shape[axis], dtype))

    def play(state: RegretMatchingState, prediction, eta, decay):
        del eta  # regret matching is scale invariant
        theta = jnp.maximum(decay * state.regret + regret(prediction, state.last_strategy), 0.0)
        # XLA's reduction, not `small_sum`: by slices it made PRM+ under the Blum-Mansour
        # reduction slower (benchmarks/README.md, "The learners' short reductions").
        total = jnp.sum(theta, axis=axis, keepdims=True)
        positive = total > 0
        # theta = 0 (no positive regret yet, or all regrets cancelled): any strategy has zero
        # regret bound; play uniform, as at the start.
        # The rule's division, rounded once (`exact_quotient`): with one positive entry the strategy
        # is exactly pure, and the next regret of the action played is exactly 0, as the rule says.
        strategy = jnp.where(positive, exact_quotient(theta, jnp.where(positive, total, 1.0)), 1.0 / theta.shape[axis])
        # Once, into memory: recomputed inside each reader, it kept the old regrets alive past
        # their update and XLA copied them every iteration (benchmarks/README.md, "Materialised
        # strategies": rm-plus+smooth 1.53x, rm-plus+stage 1.47x on the paper game).
        strategy = materialized(strategy)
        return strategy, RegretMatchingState(state.regret, strategy)

    def observe(state: RegretMatchingState, utility, decay) -> RegretMatchingState:
        r = regret(utility, state.last_strategy)
        return RegretMatchingState(jnp.maximum(decay * state.regret + r, 0.0), state.last_strategy)

    return Learner(init, play, observe)
