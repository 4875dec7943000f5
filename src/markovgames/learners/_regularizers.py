r"""Regularised argmax maps on the simplex and the stationary distribution of a stochastic matrix.

Each map solves, along the action axis of ``g`` (the last one unless ``axis`` says otherwise),

.. math:: x^\star = \arg\max_{x \in \Delta_A} \langle x, g\rangle - \mathcal R(x).

* Negative entropy :math:`\mathcal R(x) = \sum_k x_k \log x_k`: :math:`x^\star = \mathrm{softmax}(g)`
  (optimistic Hedge; Algorithm 2 and the smooth CCE variant).
* Log-barrier :math:`\mathcal R(x) = -\sum_k \log x_k` (Algorithm 1): the KKT conditions give the
  closed form :math:`x_k = 1/(\lambda - g_k)` with :math:`\lambda > \max_k g_k` fixed by
  :math:`\sum_k x_k = 1`. Writing :math:`d_k = \max g - g_k \ge 0` and :math:`c = \lambda - \max g`,
  :math:`f(c) = \sum_k 1/(c + d_k) - 1` is convex and decreasing on :math:`c > 0`, its root lies in
  :math:`[\max(1, A - \bar d), A]` (the lower end by Jensen's inequality, the upper since every
  term is at most :math:`1/c`), and Newton's method started at the lower end increases
  monotonically to the root without overshooting. We run it safeguarded (clipped to the bracket)
  until the relative step is at most ``4 eps`` or a step is not positive (rounding noise at the
  root); at most 12 iterations were measured for ``A <= 50`` (``docs/numerics.md``). For ``A = 2``
  the root is the quadratic's, computed in closed form in a cancellation-free way.

The stationary distribution of the Blum–Mansour reduction is computed by GTH elimination
(Grassmann, Taksar and Heyman 1985): it uses no subtractions, so it is accurate to machine
precision for every irreducible chain (the log-barrier rows are strictly positive); reducible
chains (rows with zeros) get one of their stationary distributions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._small_axes import small_max, small_sum

__all__ = ["entropy_argmax", "log_barrier_argmax", "stationary_distribution", "NEWTON_MAX_ITERATIONS"]

#: Upper bound on the Newton iterations of [`log_barrier_argmax`][markovgames.learners.log_barrier_argmax] (it stops earlier on convergence).
NEWTON_MAX_ITERATIONS = 64


def _check_axis(axis: int, ndim: int, needed: int = 1) -> int:
    """The number of trailing axes after the action axis ``axis`` (a negative axis)."""
    if not isinstance(axis, int) or axis >= 0 or -axis > ndim - needed + 1:
        raise ValueError(f"axis must be a negative axis of an array of {ndim} dimensions, got {axis!r}")
    return -axis - 1


def _at(tail: int, *index):
    """``x[..., *index, :, ..., :]`` with ``tail`` trailing full slices (axes after the action axes)."""
    return (Ellipsis, *index) + (slice(None),) * tail


def entropy_argmax(g: jax.Array, axis: int = -1) -> jax.Array:
    """``softmax(g)`` along ``axis``: the negative-entropy regularised argmax."""
    _check_axis(axis, g.ndim)
    # XLA may compute g twice, once for the max and once for the exponential, with different
    # roundings (fused multiply-adds in one kernel only), so that g - max(g) comes out a few ulps
    # of g above 0. For logits of 1e19 (a huge learning rate) that was exp(2048) = inf and a NaN
    # policy. Clamped, the largest term is exp(0) = 1, as in exact arithmetic.
    unnormalized = jnp.exp(jnp.minimum(g - small_max(g, axis, keepdims=True), 0.0))
    return unnormalized / small_sum(unnormalized, axis, keepdims=True)


def _log_barrier_two(d1: jax.Array) -> jax.Array:
    """Root ``c`` of ``1/c + 1/(c + d1) = 1`` for ``d1 >= 0``: ``c^2 + (d1 - 2) c - d1 = 0``."""
    root = jnp.sqrt(d1 * d1 + 4.0)
    # (2 - d + root)/2 cancels when d is large; the conjugate form 2d/(root + d - 2) cancels when d ~ 0.
    return jnp.where(d1 < 2.0, 0.5 * (2.0 - d1 + root), 2.0 * d1 / jnp.maximum(root + d1 - 2.0, 1e-300))


def log_barrier_argmax(g: jax.Array, axis: int = -1) -> jax.Array:
    r"""``argmax_{x in simplex} <x, g> + sum_k log x_k`` along ``axis``.

    Returns strictly positive ``x`` with ``sum x = 1``; see the module docstring for the method.
    """
    _check_axis(axis, g.ndim)
    if g.shape[axis] == 1:
        return jnp.ones_like(g)
    c, d, _ = _log_barrier_solve(g, axis)
    x = 1.0 / (c + d)
    # Division leaves sum(x) within a few ulps of 1; renormalise so it is 1 to rounding.
    return x / small_sum(x, axis, keepdims=True)


def _log_barrier_solve(g: jax.Array, axis: int = -1) -> tuple[jax.Array, jax.Array, jax.Array]:
    r"""The multiplier of [`log_barrier_argmax`][markovgames.learners.log_barrier_argmax] and the work it took.

    Returns ``(c, d, iterations)``: ``d = max g - g`` (shape of ``g``), ``c = lambda - max g``
    (shape of ``g`` with ``axis`` of length 1), so that ``x_k = 1/(c + d_k)`` before the final
    renormalisation, and the number of Newton iterations the ``while_loop`` ran (``0`` for
    ``A <= 2``). The loop runs until every row has converged, and a converged row is not
    updated again, so each row's result does not depend on the other rows. Requires ``A >= 2``.
    """
    num_actions = g.shape[axis]
    gmax = small_max(g, axis, keepdims=True)
    # >= 0, and 0 at the argmax; clamped since XLA may compute g twice with different roundings
    # (see entropy_argmax), and a negative d of a huge g could make c + d <= 0.
    d = jnp.maximum(gmax - g, 0.0)
    if num_actions == 2:
        # With d sorted, the nonzero gap is the sum of the two gaps (one of them is 0).
        return _log_barrier_two(small_sum(d, axis, keepdims=True)), d, jnp.zeros((), jnp.int32)
    upper = jnp.asarray(float(num_actions), g.dtype)
    lower = jnp.maximum(1.0, num_actions - jnp.mean(d, axis=axis, keepdims=True))
    c0 = lower
    tiny = jnp.finfo(g.dtype).eps

    def cond(carry):
        k, _, active = carry
        return (k < NEWTON_MAX_ITERATIONS) & jnp.any(active)

    def body(carry):
        k, c, active = carry
        inv = 1.0 / (c + d)
        f = jnp.sum(inv, axis=axis, keepdims=True) - 1.0
        fprime = jnp.sum(inv * inv, axis=axis, keepdims=True)
        c_new = jnp.clip(c + f / fprime, lower, upper)
        # Monotone convergence from the left: stop once steps are at rounding level. In exact
        # arithmetic every step is positive; a step that is not is rounding noise at the root
        # (for larger A the noise in f can exceed the relative-step threshold, and without this
        # test the iterates cycled at rounding level up to NEWTON_MAX_ITERATIONS).
        delta = jnp.abs(c_new - c) / c_new
        # A converged row keeps its root while others go on: no row depends on its neighbours.
        return k + 1, jnp.where(active, c_new, c), active & (delta > 4.0 * tiny) & (c_new > c)

    init = (jnp.zeros((), jnp.int32), c0, jnp.ones(c0.shape, bool))
    iterations, c, _ = jax.lax.while_loop(cond, body, init)
    return c, d, iterations


def stationary_distribution(q: jax.Array, axis: int = -1) -> jax.Array:
    r"""A stationary distribution ``pi = q^T pi`` of row-stochastic ``q``.

    ``q`` has its two matrix axes (row, column) at ``axis - 1`` and ``axis`` (shape
    ``(..., A, A)`` for the default ``axis=-1``); the result has the column axis removed, the
    distribution along the row axis' place. GTH elimination, unrolled over the static size
    ``A``; exact closed form for ``A <= 2``.

    For an irreducible chain (every row strictly positive, as log-barrier rows are) the
    stationary distribution is unique. A reducible chain (rows with zeros, as regret matching
    and underflowing softmax rows give) may have several; this returns a definite one: let
    ``k*`` be the highest state from which no lower-numbered state can be reached (``0`` if
    there is no other); every state reachable from ``k*`` can reach ``k*`` back, so they form one
    closed communicating class, and the result is its unique stationary distribution (zero
    elsewhere). GTH finds ``k*`` as the highest state that, once the states above it are
    censored, leads to no lower state (``s_k = 0`` below), and starts its back substitution
    there. Any stationary distribution serves the Blum–Mansour reduction (Blum and Mansour
    2007), whose guarantee needs only ``pi = q^T pi``.
    """
    tail = _check_axis(axis, q.ndim, needed=2)
    num = q.shape[axis]
    if num == 1:
        return jnp.ones(q.shape[: q.ndim - tail - 1] + q.shape[q.ndim - tail :], q.dtype)
    row_axis = axis - 1
    if num == 2:
        # pi_0 q01 = pi_1 q10: no subtraction needed. With q01 = q10 = 0 both states are
        # absorbing; the general rule below then takes state 1.
        p01 = q[_at(tail, 0, 1)]
        p10 = q[_at(tail, 1, 0)]
        total = p01 + p10
        moves = total > 0
        safe = jnp.where(moves, total, 1.0)
        return jnp.stack([jnp.where(moves, p10 / safe, 0.0), jnp.where(moves, p01 / safe, 1.0)], axis=row_axis + 1)
    p = q
    # Forward elimination (censoring states num-1, ..., 1): GTH never subtracts, so no cancellation.
    # closed[k]: state k reaches no lower state in the chain censored to 0..k (s_k = 0).
    closed = {}
    for k in range(num - 1, 0, -1):
        s = jnp.sum(p[_at(tail, k, slice(None, k))], axis=axis)
        closed[k] = s <= 0
        # Where s = 0 the row is 0 too (entries are >= 0), so the update below adds nothing; the
        # division by 1 instead of 0 only keeps the unused column finite.
        col = p[_at(tail, slice(None, k), k)] / jnp.expand_dims(jnp.where(closed[k], 1.0, s), row_axis + 1)
        row = p[_at(tail, k, slice(None, k))]
        p = p.at[_at(tail, slice(None, k), slice(None, k))].add(jnp.expand_dims(col, axis) * jnp.expand_dims(row, row_axis))
        p = p.at[_at(tail, slice(None, k), k)].set(col)
    # Back substitution from the start state (the highest closed one, else 0): x_start = 1,
    # x_k = sum_{i<k} x_i p[i, k] above it, 0 below it.
    above = {num - 1: jnp.zeros_like(closed[num - 1])}  # above[k]: some state > k is closed
    for k in range(num - 2, -1, -1):
        above[k] = above[k + 1] | closed[k + 1]
    one = jnp.ones_like(p[_at(tail, 0, 0)])
    xs = [jnp.where(above[0], 0.0, one)]
    for k in range(1, num):
        reached = sum(xs[i] * p[_at(tail, i, k)] for i in range(k))
        xs.append(jnp.where(above[k], 0.0, jnp.where(closed[k], one, reached)))
    x = jnp.stack(xs, axis=row_axis + 1)
    return x / jnp.sum(x, axis=row_axis + 1, keepdims=True)
