r"""Contractions of joint-action tensors with policies, for any number of players.

A batch of runs ends every array with the run axis ``R`` (the compiled loop runs ``R``
independent runs side by side, runs last so that the compiler vectorises over them); a single
run has no run axis. ``run_axes`` (0 or 1, static) says which: every function takes it. Before
the run axis come the joint-action axes, the ``N`` axes in absolute player order, and before
those any leading batch axes (steps, states, ...) shared by all operands. The formulas below
omit ``R``. (A length-1 run axis for single runs made XLA's fusions on large games 1.2-1.7x
slower, benchmarks/README.md.)

* `others_expectation` — :math:`[Q_i \pi_{-i}](s, a_i) = \sum_{a_{-i}} Q_i(s, a_i, a_{-i})
  \prod_{k\ne i}\pi_k(s, a_k)`, the utility vector of player ``i`` (paper, Section 2).
* `joint_product` — :math:`\prod_k \pi_k(s, a_k)` as a tensor over joint actions.
* `marginal_expectation` — :math:`\sum_{a_{-i}} X(s, b, a_{-i}) J_{-i}(s, a_{-i})` for a
  joint distribution ``J`` (the CCE quantity of a correlated mixture).
* `swap_expectation` — :math:`\sum_{a_{-i}} J(s, a, a_{-i}) X(s, b, a_{-i})`, shape
  ``(..., A_i, A_i)`` indexed ``[a, b]`` (the CE quantity: recommended ``a``, played ``b``).
"""

from __future__ import annotations

import math
import string
from functools import cache

import jax
import jax.numpy as jnp

from .._small_axes import small_sum

__all__ = ["others_expectation", "joint_product", "joint_expectation", "marginal_expectation", "swap_expectation"]

_LETTERS = string.ascii_letters


def _action_letters(num_players: int) -> str:
    if num_players > len(_LETTERS) - 3:
        raise ValueError(f"at most {len(_LETTERS) - 3} players are supported, got {num_players}")
    return _LETTERS[:num_players]


def _run_letters(run_axes: int) -> str:
    return _LETTERS[-1] if run_axes else ""


def _action_axes(ndim: int, num_players: int, run_axes: int) -> tuple[int, ...]:
    """The positions of the ``num_players`` joint-action axes of an ``ndim``-dimensional array."""
    first = ndim - run_axes - num_players
    return tuple(range(first, first + num_players))


def _fused(x: jax.Array, action_axes: tuple[int, ...]) -> bool:
    """Whether ``x``'s joint action space is small enough for a broadcast multiply and sum."""
    return math.prod(x.shape[a] for a in action_axes) <= FUSED_CONTRACTION_MAX_JOINT


@cache
def _others_spec(num_players: int, player: int, run_axes: int) -> str:
    acts = _action_letters(num_players)
    run = _run_letters(run_axes)
    inputs = ["..." + acts + run] + ["..." + acts[k] + run for k in range(num_players) if k != player]
    return ",".join(inputs) + "->..." + acts[player] + run


#: Joint action spaces up to this size are contracted by a broadcast multiply and a sum, which XLA
#: fuses into one kernel; larger ones by ``einsum`` (matrix-multiply kernels). On tiny games the
#: per-kernel overhead, not arithmetic, sets the speed (see benchmarks/README.md).
FUSED_CONTRACTION_MAX_JOINT = 64


def others_expectation(q_i: jax.Array, policies, player: int, run_axes: int) -> jax.Array:
    """``[Q_i pi_{-i}](., a_i)``: expectation of ``q_i`` over the other players' product policy.

    ``q_i`` has shape ``batch + (A_0, ..., A_{N-1}, R)``; ``policies[k]`` has shape ``batch + (A_k, R)``.
    """
    num_players = len(policies)
    others = [policies[k] for k in range(num_players) if k != player]
    if not others:
        return q_i
    action_axes = _action_axes(q_i.ndim, num_players, run_axes)
    if _fused(q_i, action_axes):
        weighted = q_i
        for k in range(num_players):
            if k != player:
                # pi_k with singleton axes at the other players' action positions.
                p_k = policies[k]
                own = p_k.ndim - 1 - run_axes
                shape = p_k.shape[:own] + tuple(p_k.shape[own] if j == k else 1 for j in range(num_players))
                weighted = weighted * p_k.reshape(shape + p_k.shape[own + 1 :])
        return small_sum(weighted, tuple(action_axes[k] for k in range(num_players) if k != player))
    return jnp.einsum(_others_spec(num_players, player, run_axes), q_i, *others, optimize="greedy")


def joint_product(policies, run_axes: int) -> jax.Array:
    """Joint product distribution ``prod_k pi_k(a_k)``, shape ``batch + (A_0, ..., A_{N-1}, R)``."""
    num_players = len(policies)
    joint = policies[0]
    for k in range(1, num_players):
        p_k = policies[k]
        own = p_k.ndim - 1 - run_axes  # batch axes before it
        joint = jnp.expand_dims(joint, joint.ndim - run_axes) * jnp.expand_dims(p_k, tuple(range(own, own + k)))
    return joint


def joint_expectation(x: jax.Array, joint: jax.Array, num_players: int, run_axes: int) -> jax.Array:
    """``sum_a x(., a) J(., a)`` over the ``num_players`` joint-action axes (``x`` may have extra leading axes)."""
    return small_sum(x * joint, _action_axes(x.ndim, num_players, run_axes))


@cache
def _marginal_spec(num_players: int, player: int, run_axes: int) -> str:
    acts = _action_letters(num_players)
    own, run = _LETTERS[-2], _run_letters(run_axes)
    x_axes = acts[:player] + own + acts[player + 1 :]
    return f"...{x_axes}{run},...{acts}{run}->...{own}{run}"


def marginal_expectation(x_i: jax.Array, joint: jax.Array, player: int, num_players: int, run_axes: int) -> jax.Array:
    """``sum_{a_-i} x_i(., b, a_-i) J_{-i}(., a_-i)`` where ``J_{-i}`` marginalises ``J`` over player ``i``."""
    axes = _action_axes(joint.ndim, num_players, run_axes)
    if _fused(joint, axes):
        others = small_sum(joint, axes[player], keepdims=True)  # J_{-i}, a singleton at player i's axis
        return small_sum(x_i * others, tuple(a for k, a in enumerate(axes) if k != player))
    return jnp.einsum(_marginal_spec(num_players, player, run_axes), x_i, joint, optimize="greedy")


@cache
def _swap_spec(num_players: int, player: int, run_axes: int) -> str:
    acts = _action_letters(num_players)
    own, run = _LETTERS[-2], _run_letters(run_axes)
    x_axes = acts[:player] + own + acts[player + 1 :]
    return f"...{acts}{run},...{x_axes}{run}->...{acts[player]}{own}{run}"


def swap_expectation(joint: jax.Array, x_i: jax.Array, player: int, num_players: int, run_axes: int) -> jax.Array:
    """``M[a, b] = sum_{a_-i} J(., a, a_-i) x_i(., b, a_-i)``, shape ``batch + (A_i, A_i, R)``."""
    axes = _action_axes(joint.ndim, num_players, run_axes)
    if _fused(joint, axes):
        own = axes[player]
        # (..., a, b, ...) with a from J and b from x_i, then the other players' axes summed out
        # (those after player i's shift by one, past the new b axis).
        product = jnp.expand_dims(joint, own + 1) * jnp.expand_dims(x_i, own)
        return small_sum(product, tuple(a if k < player else a + 1 for k, a in enumerate(axes) if k != player))
    return jnp.einsum(_swap_spec(num_players, player, run_axes), joint, x_i, optimize="greedy")
