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

The running averages move with the value update's own ``alpha_t`` (``alpha_1 = 1``), so the
carry holds :math:`\sum_j \alpha^j_t u^j`, :math:`\sum_j \alpha^j_t \langle u^j, \pi^j\rangle` and
:math:`\sum_j \alpha^j_t \pi^j(a) u^j(b)` per step and state, as Algorithm 3's averages do.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._small_axes import small_max, small_sum

__all__ = ["RegretCarry", "init_regret", "regret_step"]


class RegretCarry(NamedTuple):
    """Per player the running averages (one run's shapes ``(H, S, ...)``)."""

    utility: tuple  # per player (H, S, A_i): sum_j alpha^j_t u^j
    value: tuple  # per player (H, S): sum_j alpha^j_t <u^j, pi^j>
    pairs: tuple  # per player (H, S, A_i, A_i): sum_j alpha^j_t pi^j(a) u^j(b), rows a


def init_regret(horizon: int, num_states: int, num_actions, zeros) -> RegretCarry:
    """Zeros of the carry's shapes (``zeros(shape)`` makes the arrays)."""
    return RegretCarry(
        tuple(zeros((horizon, num_states, a)) for a in num_actions),
        tuple(zeros((horizon, num_states)) for _ in num_actions),
        tuple(zeros((horizon, num_states, a, a)) for a in num_actions),
    )


def _average(old, new, alpha):
    return (1.0 - alpha) * old + alpha * new


def regret_step(carry: RegretCarry, policies, utilities, alpha, run_axes: int) -> tuple[RegretCarry, jax.Array]:
    """Fold in iteration ``t``'s policies and utilities (per player ``(H, S, A_i[, R])``) with
    ``alpha_t``; return the new carry and ``(2, N[, R])``: each player's largest average external
    and swap regret over steps and states."""
    axis = -1 - run_axes  # the action axis
    row_axis, col_axis = axis - 1, axis
    utility, value, pairs, external, swap = [], [], [], [], []
    for i, (pi, u) in enumerate(zip(policies, utilities, strict=True)):
        m = _average(carry.utility[i], u, alpha)
        # Reductions by slices over the short axes (`small_sum`, `small_max`): elementwise, so
        # they fuse with the averages around them instead of each being a kernel of its own.
        v = _average(carry.value[i], small_sum(u * pi, axis), alpha)
        outer = jnp.expand_dims(pi, col_axis) * jnp.expand_dims(u, row_axis)  # [a, b] = pi(a) u(b)
        d = _average(carry.pairs[i], outer, alpha)
        utility.append(m)
        value.append(v)
        pairs.append(d)
        # Reduce every axis but the run axis: steps, states (and for swap the rows' sum first).
        over = tuple(range(v.ndim - run_axes))
        external.append(small_max(small_max(m, axis) - v, over))
        swap.append(small_max(small_sum(small_max(d, col_axis), axis) - v, over))  # rows: at axis after the max
    out = jnp.stack([jnp.stack(external), jnp.stack(swap)])
    return RegretCarry(tuple(utility), tuple(value), tuple(pairs)), out
