r"""Transition contractions: ``[P_h V](s, a)`` for dense and sparse kernels, one run or a batch.

Arrays of one step ``h``: ``r_h`` shape ``(N, S, A_0..A_{N-1}, R)``, ``p_h`` shape
``(S, A_0..A_{N-1}, S', R)``, per-player next-step values ``v_next`` shape ``(K, S', R)``; ``R``
is the trailing run axis of a batch in the compiled loop, absent for a single run
(``run_axes``, `._tensor`), omitted in the formulas. The value updates
(`._smooth`, `._stage`) and the output policy's recursions (`._output_metrics`)
all go through `apply_transition`: every Bellman target is :math:`r_h + P_h V_{h+1}`.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._small_axes import small_sum

__all__ = [
    "SparseKernel",
    "SparseStep",
    "apply_transition",
    "bellman_target",
    "kernel_step",
    "step_inputs",
    "scanned_step",
]


class SparseKernel(NamedTuple):
    """A sparse transition kernel on the device: ``K`` successors per row ([`SparseTransitions`][markovgames.games.SparseTransitions]).

    ``successors`` int32 and ``probabilities`` float, both ``(H, S, A..., K, R)`` (or one step's
    ``(S, A..., K, R)``; no ``R`` for a single run); a pytree, so ``scan`` slices it by step like a dense array.
    """

    successors: jax.Array
    probabilities: jax.Array


class SparseStep(NamedTuple):
    """Step ``step`` (an int, or a traced integer scalar) of a `SparseKernel`, not sliced out.

    The contraction slices what it reads itself (`sparse_transition_parts`): on the CPU a
    cache-sized piece of the step at a time (XLA copies each piece, which then stays in the cache
    while all the stacked vectors read it), on a GPU the whole step.
    """

    kernel: SparseKernel
    step: object


def kernel_step(transitions, h):
    """Step ``h`` (an int or a traced integer scalar) of a dense array or a `SparseKernel`."""
    if isinstance(transitions, SparseKernel):
        return SparseStep(transitions, h)
    return transitions[h]


def step_inputs(transitions):
    """What a scan over the steps takes for ``transitions``: a dense array, sliced by the scan, or
    for a `SparseKernel` the step numbers (see `SparseStep`); `scanned_step`
    turns one of them back into step ``h``'s kernel."""
    if isinstance(transitions, SparseKernel):
        return jnp.arange(transitions.successors.shape[0])
    return transitions


def scanned_step(transitions, x):
    """Step ``h``'s kernel from the scan input ``x`` made by `step_inputs`."""
    return SparseStep(transitions, x) if isinstance(transitions, SparseKernel) else x


#: Below this many multiply-adds per run the transition contraction is a fused broadcast-and-sum
#: (one small kernel); above it a matrix multiply, which is faster on larger games.
FUSED_TRANSITION_MAX_WORK = 4096


def apply_transition(p_h, v_next: jax.Array, run_axes: int) -> jax.Array:
    """``[P_h V](s, a) = sum_s' P_h(s'|s, a) V(s')`` for ``M`` stacked vectors: ``(M, S', R) -> (M, S, A..., R)``.

    ``p_h`` is one step's dense ``(S, A..., S', R)`` array or a `SparseStep`; the sparse
    form gathers the ``K`` successors' values of every row: ``O(M S prod(A) K)`` work instead of
    ``O(M S prod(A) S')``. A dense batch of one run (``R = 1``) drops the run axis for the
    contraction, so it compiles exactly as a single run's.
    """
    if isinstance(p_h, SparseStep):
        return jnp.stack(sparse_transition_parts(p_h, v_next, run_axes))
    if not run_axes:
        return _dense_one(p_h, v_next)
    if v_next.shape[-1] == 1:
        return _dense_one(p_h[..., 0], v_next[..., 0])[..., None]
    if p_h.size // p_h.shape[-1] * v_next.shape[0] <= FUSED_TRANSITION_MAX_WORK:  # work per run
        v = v_next.reshape((v_next.shape[0],) + (1,) * (p_h.ndim - 2) + v_next.shape[1:])
        return small_sum(p_h[None] * v, -2)
    # A matrix multiply per run, the run axis as its batch dimension.
    return jax.lax.dot_general(v_next, p_h, (((1,), (p_h.ndim - 2,)), ((2,), (p_h.ndim - 1,)))).transpose(
        (1, *range(2, p_h.ndim), 0)
    )


def _dense_one(p_h: jax.Array, v_next: jax.Array) -> jax.Array:
    """`apply_transition` of one run's dense ``p_h`` ``(S, A..., S')``: ``(M, S') -> (M, S, A...)``."""
    if p_h.size * v_next.shape[0] <= FUSED_TRANSITION_MAX_WORK:
        v = v_next.reshape((v_next.shape[0],) + (1,) * (p_h.ndim - 1) + (v_next.shape[1],))
        return small_sum(p_h[None] * v, -1)
    return jnp.tensordot(v_next, p_h, axes=([1], [p_h.ndim - 1]))


#: Sparse rows with at most this many entries are summed by an unrolled loop over ``k``, longer
#: ones by a ``fori_loop`` (same speed, bounded compile time).
_UNROLL_SUCCESSORS = 16

#: On the CPU, a step whose successor indices and probabilities take more than this many bytes is
#: contracted in pieces of states of about this size (see `sparse_transition_parts`).
_SPARSE_PIECE_BYTES = 3 << 20

#: At most this many pieces per step (each is a kernel of its own: this bounds the compile time).
_MAX_SPARSE_PIECES = 64


def sparse_transition_parts(p_h: SparseStep, values: jax.Array, run_axes: int) -> list[jax.Array]:
    """``[sum_k p[..., k] values[m, succ[..., k]] for m]``: ``(M, S', R) -> M x (S, A..., R)``.

    One successor column and one stacked vector at a time: each gather of one number per row
    fuses into the accumulation, so nothing of size ``S prod(A) K`` is ever materialised.
    (The alternatives measured, all slower, are in ``benchmarks/README.md``, "Large sparse games".)

    On the CPU, a large step is cut into pieces of states (`_SPARSE_PIECE_BYTES`), each
    contracted with all ``M`` vectors; the pieces' results are concatenated. XLA copies each
    piece's indices and probabilities out of the kernel and fuses the pieces' contractions into
    one concatenation kernel that computes them one piece after another (split over threads
    along the vector axis): a piece's indices and probabilities stay in the cache while its
    ``M`` accumulations read them, so they come from memory once rather than once per vector
    (8 times on a 2-player game's 4 stacked quantities), which is what bounded large sparse games
    (measurements in ``benchmarks/README.md``).

    In a batch, run ``r`` has its own kernel: its successor ``s'`` is entry ``s' R + r`` of the
    flattened ``(S', R)`` vector. Validated successors are in range: no index clamping.
    """
    succ_all, prob_all = p_h.kernel.successors, p_h.kernel.probabilities
    k_axis = -1 - run_axes
    num_successors = succ_all.shape[k_axis]
    if run_axes:
        num_runs = values.shape[-1]
        if values.shape[-2] * num_runs > jnp.iinfo(succ_all.dtype).max:
            raise ValueError(
                f"a compiled call of {num_runs} sparse runs with {values.shape[-2]} states each indexes more "
                f"successor values than {succ_all.dtype} can address; use a smaller run_batch group_size"
            )
        runs = jnp.arange(num_runs, dtype=succ_all.dtype)
    flats = [values[m].reshape(-1) for m in range(values.shape[0])]

    def accumulate(succ, prob, flat):
        def term(k):
            s_k = jax.lax.dynamic_index_in_dim(succ, k, axis=k_axis, keepdims=False)
            p_k = jax.lax.dynamic_index_in_dim(prob, k, axis=k_axis, keepdims=False)
            return p_k * _gather(flat, s_k * num_runs + runs if run_axes else s_k)

        if num_successors <= _UNROLL_SUCCESSORS:
            out = term(0)
            for k in range(1, num_successors):
                out = out + term(k)
            return out
        return jax.lax.fori_loop(1, num_successors, lambda k, acc: acc + term(k), term(0))

    num_states = succ_all.shape[1]
    row_shape = succ_all.shape[2:]  # (A..., K, R)
    step_bytes = num_states * math.prod(row_shape) * (succ_all.dtype.itemsize + prob_all.dtype.itemsize)
    pieces = min(-(-step_bytes // _SPARSE_PIECE_BYTES), _MAX_SPARSE_PIECES, num_states)
    # Pieces are for a CPU's caches and cores; a GPU is better fed by one kernel over the whole step.
    if pieces <= 1 or jax.default_backend() != "cpu":
        succ, prob = succ_all[p_h.step], prob_all[p_h.step]
        return [accumulate(succ, prob, flat) for flat in flats]
    zero = jnp.zeros((), jnp.int32)
    step = jnp.asarray(p_h.step, jnp.int32)
    bounds = [num_states * k // pieces for k in range(pieces + 1)]
    outs = []
    for lo, hi in pairwise(bounds):
        corner = (step, jnp.int32(lo)) + (zero,) * len(row_shape)
        succ = jax.lax.dynamic_slice(succ_all, corner, (1, hi - lo, *row_shape))[0]
        prob = jax.lax.dynamic_slice(prob_all, corner, (1, hi - lo, *row_shape))[0]
        outs.append(jnp.stack([accumulate(succ, prob, flat) for flat in flats]))
    out = jnp.concatenate(outs, axis=1)
    return [out[m] for m in range(len(flats))]


def _gather(vector: jax.Array, index: jax.Array) -> jax.Array:
    """``vector[index]`` for in-range indices (no wrapping of negative ones, no clamping)."""
    numbers = jax.lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    return jax.lax.gather(vector, index[..., None], numbers, (1,), mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def bellman_target(r_h: jax.Array, p_h: jax.Array, v_next: jax.Array, run_axes: int) -> jax.Array:
    """``r_h + P_h V_{h+1}`` for per-player next values ``v_next`` of shape ``(N, S', R)``."""
    return r_h + apply_transition(p_h, v_next, run_axes)
