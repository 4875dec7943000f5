r"""Projected-gradient learners: optimistic gradient (OGDA), extragradient, ExRM+ and smooth PRM+.

These learners take Euclidean steps of size ``eta`` on their state and project (Euclidean
projection onto a convex set), so, unlike FTRL, a step cannot be rescaled by the value update's
weights: they ignore ``decay`` and are the algorithms of their papers with **uniform averaging**
(``LEARNER+smooth-uniform``; with other averagings they run as written, unweighted). Each keeps a
base point :math:`\hat z^t` and, at iteration ``t``, plays from a step off it with the prediction
:math:`m^t`, then steps the base point with the observed utility :math:`u^t`:

============================  ===================================================================
``ogda``                      :math:`x^t = \Pi_\Delta(\hat x^t + \eta m^t)`,
                              :math:`\hat x^{t+1} = \Pi_\Delta(\hat x^t + \eta u^t)`; ``m^t = u^{t-1}``
                              (optimistic gradient; with ``--no-optimism``, projected gradient ascent)
``extragradient``             the same steps with :math:`m^t = u(\hat x^t)`, the utility at the base
                              point (a second query; Korpelevich 1976)
``exrm-plus``                 ExRM+ (Cai et al., ICLR 2025): on the chopped-off cone
                              :math:`C = \{z \ge 0, \|z\|_1 \ge 1\}` with :math:`x = z/\|z\|_1`, steps
                              :math:`z + \eta\,(u - \langle u, x\rangle\mathbf 1)` projected onto ``C``; the
                              half step uses the utility at the base point's strategy (a second query)
``sprm-plus``                 smooth predictive RM+ (Farina et al., NeurIPS 2023): the same steps on
                              ``C`` with the prediction :math:`m^t = u^{t-1}`
============================  ===================================================================

The regret vector of a utility ``u`` at a strategy ``x`` is :math:`u - \langle u, x\rangle\mathbf 1`:
for ExRM+ the half step's at the base point's strategy :math:`\hat x^t = \hat z^t / \|\hat z^t\|_1`,
the full step's at the strategy played; for SPRM+ the prediction's at the last strategy played and
the full step's at the strategy played; each is formed as :math:`\sum_b x_b (u_a - u_b)`, exactly 0
where the utilities tie (`markovgames.learners.regret_vector`). Every base point starts uniform (``1/n`` per action, a
point of ``C`` and of the simplex); ``init_at`` starts it at a given strategy.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._small_axes import regret_vector
from ._learner import Learner

__all__ = [
    "project_simplex",
    "project_chopped_cone",
    "ProjectedState",
    "optimistic_gradient",
    "extragradient",
    "extragradient_rm_plus",
    "smooth_predictive_rm_plus",
]


def project_simplex(y: jax.Array, axis: int = -1, radius: float = 1.0) -> jax.Array:
    """The Euclidean projection of ``y`` onto ``{x >= 0, sum x = radius}`` along ``axis`` (sort-based;
    Held, Wolfe and Crowder 1974; Duchi et al. 2008)."""
    moved = jnp.moveaxis(y, axis, -1)
    n = moved.shape[-1]
    ordered = -jnp.sort(-moved, axis=-1)  # descending
    excess = jnp.cumsum(ordered, axis=-1) - radius
    k = jnp.arange(1, n + 1, dtype=y.dtype)
    support = ordered - excess / k > 0
    # The largest k with ordered_k > (sum_{j<=k} ordered_j - radius) / k (k = 1 always holds).
    count = jnp.sum(support, axis=-1, keepdims=True)
    theta = jnp.take_along_axis(excess, count - 1, axis=-1) / count.astype(y.dtype)
    return jnp.moveaxis(jnp.maximum(moved - theta, 0.0), -1, axis)


def project_chopped_cone(y: jax.Array, axis: int = -1, radius: float = 1.0) -> jax.Array:
    """The Euclidean projection of ``y`` onto ``{z >= 0, sum z >= radius}`` along ``axis``: the
    positive part where its sum is at least ``radius`` (it is then the projection onto the larger
    set ``z >= 0``), else the projection onto the scaled simplex ``{z >= 0, sum z = radius}``
    (the sum constraint is active at the optimum)."""
    positive = jnp.maximum(y, 0.0)
    enough = jnp.sum(positive, axis=axis, keepdims=True) >= radius
    return jnp.where(enough, positive, project_simplex(y, axis, radius))


def _normalised(z: jax.Array, axis: int) -> jax.Array:
    """``z / sum z`` along ``axis``, uniform where ``z`` is 0 (a cone point's strategy)."""
    total = jnp.sum(z, axis=axis, keepdims=True)
    positive = total > 0
    return jnp.where(positive, z / jnp.where(positive, total, 1.0), 1.0 / z.shape[axis])


class ProjectedState(NamedTuple):
    """A projected-gradient learner's state: the base point :math:`\\hat z` (a strategy, or a cone
    point) and the strategy played last (uniform before the first play)."""

    base: jax.Array
    last_strategy: jax.Array


def _regret(u: jax.Array, x: jax.Array, axis: int) -> jax.Array:
    # As pairwise differences (`regret_vector`): exactly 0 where the utilities tie (to 16 epsilons).
    return regret_vector(u, x, axis)


def _learner(axis: int, *, cone: str | None, two_query: bool, initial_base) -> Learner:
    """The common shape of the four learners (see the module docstring).

    ``cone``: ``None`` (steps on the simplex with the utility itself) or ``"chopped"`` (the
    chopped-off cone ``{z >= 0, ||z||_1 >= 1}``, with regret vectors as steps). ``initial_base(shape, dtype)``: the base point before iteration 1.
    """

    def project(y):
        return project_simplex(y, axis) if cone is None else project_chopped_cone(y, axis)

    def strategy_of(z):
        return z if cone is None else _normalised(z, axis)

    def init(shape, dtype=jnp.float64) -> ProjectedState:
        return ProjectedState(initial_base(shape, dtype), jnp.full(shape, 1.0 / shape[axis], dtype))

    def init_at(strategy, dtype=jnp.float64) -> ProjectedState:
        # A strategy is a point of the simplex, which lies in each of the three sets.
        strategy = jnp.asarray(strategy, dtype)
        return ProjectedState(strategy, strategy)

    def propose(state: ProjectedState, eta, decay):
        del eta, decay
        return strategy_of(state.base)

    def play(state: ProjectedState, prediction, eta, decay):
        del decay  # unweighted: see the module docstring
        if cone is None:
            step = prediction
        else:
            # The prediction's regret: at the base point's strategy (ExRM+'s half step) or at the
            # strategy played last (SPRM+'s predicted regret).
            at = strategy_of(state.base) if two_query else state.last_strategy
            step = _regret(prediction, at, axis)
        strategy = strategy_of(project(state.base + eta * step))
        return strategy, ProjectedState(state.base, strategy)

    def observe(state: ProjectedState, utility, decay, eta) -> ProjectedState:
        del decay
        step = utility if cone is None else _regret(utility, state.last_strategy, axis)
        return ProjectedState(project(state.base + eta * step), state.last_strategy)

    return Learner(init, play, observe, propose=propose if two_query else None, observe_takes_eta=True, init_at=init_at)


def optimistic_gradient(axis: int = -1) -> Learner:
    """Optimistic gradient ascent on the simplex (OGDA; Popov 1980, Rakhlin and Sridharan 2013)."""
    return _learner(axis, cone=None, two_query=False, initial_base=lambda shape, dtype: jnp.full(shape, 1.0 / shape[axis], dtype))


def extragradient(axis: int = -1) -> Learner:
    """Extragradient on the simplex (Korpelevich 1976): two utility queries per iteration."""
    return _learner(axis, cone=None, two_query=True, initial_base=lambda shape, dtype: jnp.full(shape, 1.0 / shape[axis], dtype))


def extragradient_rm_plus(axis: int = -1) -> Learner:
    """ExRM+ (Cai et al., ICLR 2025): extragradient on the chopped-off cone of regret matching+."""
    return _learner(
        axis, cone="chopped", two_query=True, initial_base=lambda shape, dtype: jnp.full(shape, 1.0 / shape[axis], dtype)
    )


def smooth_predictive_rm_plus(axis: int = -1) -> Learner:
    """Smooth predictive RM+ (SPRM+; Farina et al., NeurIPS 2023): predictive RM+ on the chopped-off cone."""
    return _learner(
        axis, cone="chopped", two_query=False, initial_base=lambda shape, dtype: jnp.full(shape, 1.0 / shape[axis], dtype)
    )
