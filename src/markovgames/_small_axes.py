"""Reductions over very short axes written as sums of slices.

XLA's CPU backend emits a reduction over a minor axis of length 2 as a scalar loop; the same sum
written as an addition of two slices is elementwise and vectorises over the other axes. On tiny
games most reductions are over such axes: actions, joint actions, the successor states of a
two-state game, where the kernels, not the arithmetic, set the speed (benchmarks/README.md).

Only float64 takes this path: in float32 the slice-by-slice order was measurably less accurate
(outside the documented float32 tolerance), so float32 keeps XLA's own reductions.

`materialized` goes the other way: a reduction where XLA would otherwise repeat cheap elementwise
work in every kernel that reads its result. `exact_quotient` keeps a division a division, and
`regret_vector` forms a regret whose ties are exact.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["exact_quotient", "materialized", "regret_vector", "small_max", "small_sum"]

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


#: Action axes up to this long sum ``regret_vector``'s terms in straight-line code; longer ones in
#: a loop (one term per iteration: the pairwise differences are never all in memory at once).
_UNROLLED_PAIRS = 16

#: Two utilities closer than this many machine epsilons of the larger one are a tie for
#: `regret_vector`. Measured (rm-plus, 400 iterations of the paper's game and of random games,
#: both value updates, with and without optimism): the utilities that tie in exact arithmetic
#: came out up to 2.2e-16 apart (one epsilon), every other pair at least 1.8e-9 apart. 16 epsilons
#: (3.6e-15 in float64) leave room for games whose values pass through more roundings.
TIE_EPSILONS = 16


def regret_vector(utility, strategy, axis: int = -1):
    r"""The regret vector :math:`r_a = u_a - \langle u, x\rangle` of playing ``strategy`` against
    ``utility``, formed from pairwise differences: :math:`r_a = \sum_b x_b\,d(u_a, u_b)`.

    :math:`d(u_a, u_b) = u_a - u_b`, except that two utilities within ``TIE_EPSILONS`` machine
    epsilons of the larger magnitude, :math:`|u_a - u_b| \le 16\,\epsilon \max(|u_a|, |u_b|)`,
    are a tie: :math:`d = 0`. For a probability vector ``x`` and utilities apart from ties this is
    the regret vector (every difference is exact arithmetic's up to rounding). At a tie it is what
    exact arithmetic gives, where ``u - <u, x> 1`` is not: rounding the inner product, or the
    utilities themselves (two values that are equal as rationals, such as ``0.8 + 0.2`` and
    ``0 + 1`` through a value update, differ by an epsilon in float64), leaves a regret of about
    ``1e-16`` where the rule's is exactly 0. For a learner whose play jumps where its regret
    vanishes (regret matching: ``1e-16`` plays pure, ``0`` uniform) that last bit changes the run.
    Here :math:`r_a` is exactly 0 when every action played with positive probability ties with
    ``a``, and its sign is exact otherwise (every term has the sign of its difference). The
    tolerance is relative, so it presumes utilities computed from terms of one sign (rewards in
    ``[0, 1]``, as the engine's units are), where rounding is relative to the result. Costs ``A``
    times the elementwise work of the inner product (``A`` the length of ``axis``).
    """
    utility, strategy = jnp.broadcast_arrays(utility, strategy)
    n = utility.shape[axis]
    axis %= utility.ndim
    tie = TIE_EPSILONS * jnp.finfo(utility.dtype).eps

    def term(b):
        # x_b d(u, u_b): the term of action b for every a at once (exactly 0 at a = b).
        take = jax.lax.index_in_dim if isinstance(b, int) else jax.lax.dynamic_index_in_dim
        u_b = take(utility, b, axis=axis, keepdims=True)
        x_b = take(strategy, b, axis=axis, keepdims=True)
        d = utility - u_b
        return x_b * jnp.where(jnp.abs(d) <= tie * jnp.maximum(jnp.abs(utility), jnp.abs(u_b)), 0.0, d)

    if n <= _UNROLLED_PAIRS:
        out = term(0)
        for b in range(1, n):
            out = out + term(b)
        return out
    return jax.lax.fori_loop(1, n, lambda b, acc: acc + term(b), term(0))
