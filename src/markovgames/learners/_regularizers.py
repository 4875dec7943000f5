r"""Regularised argmax maps on the simplex and the stationary distribution of a stochastic matrix.

Each map solves, along the last axis of ``g``,

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
precision for every irreducible chain (the log-barrier rows are strictly positive).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["entropy_argmax", "log_barrier_argmax", "stationary_distribution", "NEWTON_MAX_ITERATIONS"]

#: Upper bound on the Newton iterations of :func:`log_barrier_argmax` (it stops earlier on convergence).
NEWTON_MAX_ITERATIONS = 64


def entropy_argmax(g: jax.Array) -> jax.Array:
    """``softmax(g)`` along the last axis: the negative-entropy regularised argmax."""
    return jax.nn.softmax(g, axis=-1)


def _log_barrier_two(d1: jax.Array) -> jax.Array:
    """Root ``c`` of ``1/c + 1/(c + d1) = 1`` for ``d1 >= 0``: ``c^2 + (d1 - 2) c - d1 = 0``."""
    root = jnp.sqrt(d1 * d1 + 4.0)
    # (2 - d + root)/2 cancels when d is large; the conjugate form 2d/(root + d - 2) cancels when d ~ 0.
    return jnp.where(d1 < 2.0, 0.5 * (2.0 - d1 + root), 2.0 * d1 / jnp.maximum(root + d1 - 2.0, 1e-300))


def log_barrier_argmax(g: jax.Array) -> jax.Array:
    r"""``argmax_{x in simplex} <x, g> + sum_k log x_k`` along the last axis.

    Returns strictly positive ``x`` with ``sum x = 1``; see the module docstring for the method.
    """
    if g.shape[-1] == 1:
        return jnp.ones_like(g)
    c, d, _ = _log_barrier_solve(g)
    x = 1.0 / (c + d)
    # Division leaves sum(x) within a few ulps of 1; renormalise so it is 1 to rounding.
    return x / jnp.sum(x, axis=-1, keepdims=True)


def _log_barrier_solve(g: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    r"""The multiplier of :func:`log_barrier_argmax` and the work it took.

    Returns ``(c, d, iterations)``: ``d = max g - g`` (shape of ``g``), ``c = lambda - max g``
    (shape ``g.shape[:-1] + (1,)``), so that ``x_k = 1/(c + d_k)`` before the final
    renormalisation, and the number of Newton iterations the ``while_loop`` ran (``0`` for
    ``A <= 2``). Without ``vmap`` the loop runs until every row has converged, so the count is
    the batch's maximum; under ``vmap`` it is per row. Requires ``A >= 2``.
    """
    num_actions = g.shape[-1]
    gmax = jnp.max(g, axis=-1, keepdims=True)
    d = gmax - g  # >= 0, and 0 at the argmax
    if num_actions == 2:
        # With d sorted, the nonzero gap is the sum of the two gaps (one of them is 0).
        return _log_barrier_two(jnp.sum(d, axis=-1, keepdims=True)), d, jnp.zeros((), jnp.int32)
    upper = jnp.asarray(float(num_actions), g.dtype)
    lower = jnp.maximum(1.0, num_actions - jnp.mean(d, axis=-1, keepdims=True))
    c0 = lower
    tiny = jnp.finfo(g.dtype).eps

    def cond(carry):
        k, _, active = carry
        return (k < NEWTON_MAX_ITERATIONS) & jnp.any(active)

    def body(carry):
        k, c, _ = carry
        inv = 1.0 / (c + d)
        f = jnp.sum(inv, axis=-1, keepdims=True) - 1.0
        fprime = jnp.sum(inv * inv, axis=-1, keepdims=True)
        c_new = jnp.clip(c + f / fprime, lower, upper)
        # Monotone convergence from the left: stop once steps are at rounding level. In exact
        # arithmetic every step is positive; a step that is not is rounding noise at the root
        # (for larger A the noise in f can exceed the relative-step threshold, and without this
        # test the iterates cycled at rounding level up to NEWTON_MAX_ITERATIONS).
        delta = jnp.abs(c_new - c) / c_new
        return k + 1, c_new, (delta > 4.0 * tiny) & (c_new > c)

    init = (jnp.zeros((), jnp.int32), c0, jnp.ones(c0.shape, bool))
    iterations, c, _ = jax.lax.while_loop(cond, body, init)
    return c, d, iterations


def stationary_distribution(q: jax.Array) -> jax.Array:
    r"""Stationary distribution ``pi = q^T pi`` of row-stochastic ``q`` (shape ``(..., A, A)``).

    GTH elimination, unrolled over the static size ``A``; exact closed form for ``A <= 2``.
    Requires an irreducible chain (true for strictly positive rows).
    """
    num = q.shape[-1]
    if num == 1:
        return jnp.ones(q.shape[:-1], q.dtype)
    if num == 2:
        # pi_0 q01 = pi_1 q10: no subtraction needed.
        p01 = q[..., 0, 1]
        p10 = q[..., 1, 0]
        total = p01 + p10
        return jnp.stack([p10 / total, p01 / total], axis=-1)
    p = q
    # Forward elimination (censoring states num-1, ..., 1): GTH never subtracts, so no cancellation.
    for k in range(num - 1, 0, -1):
        s = jnp.sum(p[..., k, :k], axis=-1)
        col = p[..., :k, k] / s[..., None]
        p = p.at[..., :k, :k].add(col[..., :, None] * p[..., k, None, :k])
        p = p.at[..., :k, k].set(col)
    # Back substitution: x_0 = 1, x_k = sum_{i<k} x_i p[i, k].
    xs = [jnp.ones(q.shape[:-2], q.dtype)]
    for k in range(1, num):
        xs.append(sum(xs[i] * p[..., i, k] for i in range(k)))
    x = jnp.stack(xs, axis=-1)
    return x / jnp.sum(x, axis=-1, keepdims=True)
