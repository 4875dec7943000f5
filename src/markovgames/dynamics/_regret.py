r"""The players' external and swap regret of the played sequence, carried in the compiled loop.

At every step ``h`` and state ``s`` a player's learner plays :math:`\pi^j_{h,i}(s)` and observes
the utility vector :math:`u^j_{h,i}(s)` (under simultaneous updates :math:`[Q^j_{h,i}\pi^j_{-i}](s)`;
under alternating ones the utility it saw, `._interplay`). With the value update's weights
:math:`\alpha^j_t = w_j / \sum_{k\le t} w_k` (uniform averaging: ``1/t``), the **average external
regret** and **average swap regret** after ``t`` iterations are

.. math:: \mathrm{Reg}^t_{h,i}(s) = \max_a \sum_{j\le t}\alpha^j_t\big(u^j(a) - \langle u^j, \pi^j\rangle\big),
          \qquad
          \mathrm{SwapReg}^t_{h,i}(s) = \sum_a \max_b \sum_{j\le t}\alpha^j_t\,\pi^j(a)\big(u^j(b) - u^j(a)\big),

(the best fixed action, and the best action per recommended action, in hindsight) and the loop
reports, per player and iteration, their maximum over steps and states. Under uniform averaging
``t`` times them is the cumulative regret of the textbooks. On a normal-form game (one state,
``H = 1``) they are the players' regrets in the game. Both are at least 0 only when the maximum
is over deviations that include the played strategy: external regret can be negative (the played
sequence beat every fixed action); swap regret is always at least 0.

The running average moves with the value update's own ``alpha_t`` (``alpha_1 = 1``), as
Algorithm 3's averages do, and the carry holds only :math:`D_t(a, b) = \sum_j \alpha^j_t \pi^j(a)
u^j(b)` per step and state: the average utility is its column sum :math:`\sum_a D_t(a, \cdot)`
(the strategies sum to 1) and the average played value its trace, so one average serves both
regrets. Both are formed from the differences within a row, :math:`D_t(a, b) - D_t(a, a) =
\sum_j\alpha^j_t\pi^j(a)(u^j(b) - u^j(a))` (summed over ``a`` for external regret, maximised over
``b`` for swap regret), so that a deviation whose utilities tie with the played action's has
regret exactly 0, not a rounded ``1e-17``, and swap regret is exactly at least 0.

The stage-based update (`._stage`) restarts its learners every stage with weight 1 per iteration,
so there a player's regret at iteration ``t`` is the average regret over the iterations of ``t``'s
stage so far: uniform weights within the stage, :math:`\alpha = 1/p` with ``p`` the 1-based
position of ``t`` in its stage, against the utilities the learner saw in that stage
(:math:`[Q^\tau\pi^t_{-i}]`, or the alternated ones), the largest over steps and states. It
restarts at 0 with each stage with no reset of the carry: a stage's first iteration has
:math:`\alpha = 1`, and :math:`(1 - 1) D + 1 \cdot \pi u^\top` discards a (finite) old average
exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._small_axes import small_max, small_sum

__all__ = ["RegretCarry", "init_regret", "regret_step"]


class RegretCarry(NamedTuple):
    """Per player the running average ``D_t`` (one run's shapes ``(H, S, A_i, A_i)``, rows ``a``)."""

    pairs: tuple  # per player (H, S, A_i, A_i): sum_j alpha^j_t pi^j(a) u^j(b)


def init_regret(horizon: int, num_states: int, num_actions, zeros) -> RegretCarry:
    """Zeros of the carry's shapes (``zeros(shape)`` makes the arrays)."""
    return RegretCarry(tuple(zeros((horizon, num_states, a, a)) for a in num_actions))


def regret_step(carry: RegretCarry, policies, utilities, alpha, run_axes: int) -> tuple[RegretCarry, jax.Array]:
    """Fold in iteration ``t``'s policies and utilities (per player ``(H, S, A_i[, R])``) with
    ``alpha_t``; return the new carry and ``(2, N[, R])``: each player's largest average external
    and swap regret over steps and states."""
    axis = -1 - run_axes  # the action axis; a pair's rows are at axis - 1, its columns at axis
    row_axis, col_axis = axis - 1, axis
    pairs, external, swap = [], [], []
    for pi, u, old in zip(policies, utilities, carry.pairs, strict=True):
        outer = jnp.expand_dims(pi, col_axis) * jnp.expand_dims(u, row_axis)  # [a, b] = pi(a) u(b)
        d = (1.0 - alpha) * old + alpha * outer
        pairs.append(d)
        # The regrets from differences within each row, G(a, b) = D(a, b) - D(a, a), not from
        # differences of sums: a deviation whose utilities equal the played action's at every
        # iteration has D(a, b) = D(a, a) bit for bit (the same roundings), so its regret is
        # exactly 0, and swap regret is exactly >= 0 (G(a, a) = 0 is among each row's maximum).
        # Reductions by slices over the short axes (`small_sum`, `small_max`): elementwise, so
        # they fuse with the average instead of each being a kernel of its own. After a reduction
        # over the columns, the rows are at `axis`.
        n = d.shape[col_axis]
        eye = jnp.eye(n, dtype=d.dtype).reshape(n, n, *(1,) * run_axes)
        diagonal = jnp.expand_dims(small_sum(d * eye, col_axis), col_axis)  # (H, S, A, 1[, R]): D(a, a)
        gain = d - diagonal  # G(a, b)
        over = tuple(range(gain.ndim - 2 - run_axes))  # steps and states
        external.append(small_max(small_max(small_sum(gain, row_axis), axis), over))
        swap.append(small_max(small_sum(small_max(gain, col_axis), axis), over))
    out = jnp.stack([jnp.stack(external), jnp.stack(swap)])
    return RegretCarry(tuple(pairs)), out
