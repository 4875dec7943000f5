"""Reductions over very short axes written as sums of slices.

XLA's CPU backend emits a reduction over a minor axis of length 2 as a scalar loop; the same sum
written as an addition of two slices is elementwise and vectorises over the other axes. On tiny
games most reductions are over such axes: actions, joint actions, the successor states of a
two-state game, where the kernels, not the arithmetic, set the speed (benchmarks/README.md).

Only float64 takes this path: in float32 the slice-by-slice order was measurably less accurate
(outside the documented float32 tolerance), so float32 keeps XLA's own reductions.

`materialized` goes the other way: a reduction where XLA would otherwise repeat cheap elementwise
work in every kernel that reads its result. `exact_quotient` keeps a division a division.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["exact_quotient", "materialized", "small_max", "small_sum"]

#: Axes up to this long are reduced by slices; longer ones by ``jnp.sum`` / ``jnp.max``. Measured
#: (interleaved A/B, CPU time): length-2 axes gain on the paper game; with length-4 axes included,
#: the medium game (A_i = 4) lost 25-45%, so they keep XLA's reductions.
SMALL_AXIS = 2


def _axes(x, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return sorted((a % x.ndim for a in axes), reverse=True)


def _reduce(x, axis, keepdims, combine, fallback):
    if x.dtype != jnp.float64:
        return fallback(x, axis=tuple(_axes(x, axis)), keepdims=keepdims)
    for a in _axes(x, axis):
        n = x.shape[a]
        if n > SMALL_AXIS:
            x = fallback(x, axis=a, keepdims=True)
        else:
            out = jax.lax.index_in_dim(x, 0, axis=a, keepdims=True)
            for k in range(1, n):
                out = combine(out, jax.lax.index_in_dim(x, k, axis=a, keepdims=True))
            x = out
    if not keepdims:
        x = jnp.squeeze(x, axis=tuple(_axes(x, axis)))
    return x


def small_sum(x, axis, keepdims: bool = False):
    """``jnp.sum(x, axis, keepdims=keepdims)``, by slices over axes of length <= ``SMALL_AXIS``."""
    return _reduce(x, axis, keepdims, jnp.add, jnp.sum)


def small_max(x, axis, keepdims: bool = False):
    """``jnp.max(x, axis, keepdims=keepdims)``, by slices over axes of length <= ``SMALL_AXIS``."""
    return _reduce(x, axis, keepdims, jnp.maximum, jnp.max)


def materialized(x):
    """``x`` itself, written to memory once on the CPU: the maximum of ``x`` and ``-inf`` as a reduction.

    XLA's CPU fusion recomputes a cheap elementwise result inside every kernel that reads it. When
    that result comes from a loop's carried arrays, those arrays are then still read after the
    loop body has written their new values, and XLA copies them first: kernels of their own, which
    on a tiny game cost more than the arithmetic. A reduction's result is computed once, so its
    readers read memory instead. ``max(x, -inf)`` is ``x`` for every float, signed zeros and NaN
    included: the numbers do not change (benchmarks/README.md, "Materialised strategies").
    Off the CPU, ``x`` is returned as it is.
    """
    if jax.default_backend() != "cpu":
        return x
    return jnp.max(jnp.stack([x, jnp.full_like(x, -jnp.inf)]), axis=0)


def exact_quotient(numerator, denominator):
    """``numerator / denominator`` rounded once, as IEEE division: never ``numerator * (1 / denominator)``.

    XLA rewrites a division by a broadcast value (a normaliser such as ``theta / theta.sum(axis,
    keepdims=True)``) into a multiplication by its reciprocal, which rounds twice: a strategy with
    one positive entry ``theta_k`` comes out as ``theta_k * (1 / theta_k)``, ``0.9999999999999999``
    for about one value in seven rather than exactly ``1``. For a learner whose play is
    discontinuous, such as regret matching (a regret of ``1e-16`` plays pure where ``0`` plays
    uniform), that last bit changes the run. Here the denominator is broadcast to the numerator's
    shape behind an optimisation barrier, so that the compiler sees an elementwise division of two
    arrays, which it leaves as it is. ``denominator`` must broadcast to ``numerator``'s shape.
    """
    denominator = jax.lax.optimization_barrier(jnp.broadcast_to(denominator, jnp.shape(numerator)))
    return numerator / denominator
