r"""Value updates: smooth (Algorithm 1) and stage-based (Algorithm 2).

Arrays of one step ``h``: ``r_h`` shape ``(N, S, A_0..A_{N-1})``, ``p_h`` shape
``(S, A_0..A_{N-1}, S')``, per-player next-step values ``v_next`` shape ``(K, S')``.

* Smooth (Algorithm 1, value update; eq. (4)):
  :math:`Q^t_h = (1-\alpha_t) Q^{t-1}_h + \alpha_t (r_h + P_h V^t_{h+1})` with
  :math:`V^t_{h+1}(s') = \langle Q^t_{h+1}(s', \cdot), \pi^t_{h+1}(s', \cdot)\rangle`, computed for
  ``h = H-1, ..., 0`` so that step ``h+1`` is already updated.
* Stage-based (Algorithm 2):
  :math:`Q^{\tau+1}_h = \frac1{L_\tau}\sum_{t'\in\text{stage}\,\tau} (r_h + P_h[Q^\tau_{h+1}\pi^{t'}_{h+1}])
  = r_h + P_h \bar v_{h+1}` where :math:`\bar v_{h+1}` is the stage average of
  :math:`[Q^\tau_{h+1}\pi^{t'}_{h+1}]` (the operator is affine, so averaging first is exact).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._small_axes import small_sum

__all__ = ["SparseKernel", "apply_transition", "bellman_target", "smooth_q_update", "stage_q_update", "kernel_step"]


class SparseKernel(NamedTuple):
    """A sparse transition kernel on the device: ``K`` successors per row (:class:`~markovgames.games.SparseTransitions`).

    ``successors`` int32 and ``probabilities`` float, both ``(H, S, A..., K)`` (or one step's
    ``(S, A..., K)``); a pytree, so ``scan`` slices it by step like a dense array.
    """

    successors: jax.Array
    probabilities: jax.Array


def kernel_step(transitions, h):
    """Step ``h`` (an int or a slice) of a dense array or a :class:`SparseKernel`."""
    return jax.tree_util.tree_map(lambda x: x[h], transitions)


#: Below this many multiply-adds the transition contraction is a fused broadcast-and-sum (one small
#: kernel); above it a matrix multiply, which is faster on larger games.
FUSED_TRANSITION_MAX_WORK = 4096


def apply_transition(p_h, v_next: jax.Array) -> jax.Array:
    """``[P_h V](s, a) = sum_s' P_h(s'|s, a) V(s')`` for ``M`` stacked vectors: ``(M, S') -> (M, S, A...)``.

    ``p_h`` is one step's dense ``(S, A..., S')`` array or :class:`SparseKernel`; the sparse
    form gathers the ``K`` successors' values of every row: ``O(M S prod(A) K)`` work instead of
    ``O(M S prod(A) S')``.
    """
    if isinstance(p_h, SparseKernel):
        return jnp.moveaxis(_sparse_transition(p_h, v_next.T), -1, 0)
    if p_h.size * v_next.shape[0] <= FUSED_TRANSITION_MAX_WORK:
        v = v_next.reshape((v_next.shape[0],) + (1,) * (p_h.ndim - 1) + (v_next.shape[1],))
        return small_sum(p_h[None] * v, -1)
    return jnp.tensordot(v_next, p_h, axes=([1], [p_h.ndim - 1]))


#: Sparse rows with at most this many entries are summed by an unrolled loop over ``k``, longer
#: ones by a ``fori_loop`` (same speed, bounded compile time).
_UNROLL_SUCCESSORS = 16


def _sparse_transition(p_h: SparseKernel, values_t: jax.Array) -> jax.Array:
    """``sum_k p[..., k] values_t[succ[..., k]]``: ``(S', M) -> (S, A..., M)``.

    One successor column at a time: each gather of ``M`` contiguous numbers (a row of the
    transposed values) fuses into the accumulation, so nothing of size ``S prod(A) K M`` is ever
    materialised. Gathering all ``K`` at once and reducing was 5x slower and needed a temporary of
    that size (``benchmarks/README.md``). Validated successors are in range: no index clamping.
    """
    succ, prob = p_h.successors, p_h.probabilities
    num_successors = succ.shape[-1]

    def term(k):
        s_k = jax.lax.dynamic_index_in_dim(succ, k, axis=-1, keepdims=False)
        p_k = jax.lax.dynamic_index_in_dim(prob, k, axis=-1, keepdims=False)
        return p_k[..., None] * values_t.at[s_k].get(mode="promise_in_bounds")

    if num_successors <= _UNROLL_SUCCESSORS:
        out = term(0)
        for k in range(1, num_successors):
            out = out + term(k)
        return out
    return jax.lax.fori_loop(1, num_successors, lambda k, acc: acc + term(k), term(0))


def bellman_target(r_h: jax.Array, p_h: jax.Array, v_next: jax.Array) -> jax.Array:
    """``r_h + P_h V_{h+1}`` for per-player next values ``v_next`` of shape ``(N, S')``."""
    return r_h + apply_transition(p_h, v_next)


def smooth_q_update(q_prev: jax.Array, target: jax.Array, alpha) -> jax.Array:
    """``(1 - alpha_t) Q^{t-1}_h + alpha_t target`` (Algorithm 1, value update)."""
    return (1.0 - alpha) * q_prev + alpha * target


def stage_q_update(rewards: jax.Array, transitions: jax.Array, v_sum: jax.Array, stage_length) -> jax.Array:
    """``Q^{tau+1}`` for all steps from the stage sums ``v_sum[h] = sum_t' [Q^tau_h pi^t'_h]``, shape ``(H, N, S)``.

    Step ``H-1`` has no successor: ``Q^{tau+1}_{H-1} = r_{H-1}``.
    """
    horizon = rewards.shape[0]
    v_avg = v_sum / stage_length
    later = (
        jax.vmap(bellman_target)(rewards[:-1], kernel_step(transitions, slice(None, -1)), v_avg[1:])
        if horizon > 1
        else None
    )
    return rewards if later is None else jnp.concatenate([later, rewards[-1:]], axis=0)
