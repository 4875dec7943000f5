r"""The Blum–Mansour swap-regret reduction over any external-regret learner (Blum and Mansour, JMLR 2007).

``A`` copies of a base learner, one per recommended action ``a``, make a no-swap-regret learner:
copy ``a`` plays the row :math:`q^{t,a}`, the strategy :math:`\pi^t` is a stationary distribution
of the row-stochastic matrix with rows :math:`q^{t,a}` (:math:`\pi^t = \pi^t Q^t`), and copy ``a``
observes :math:`\pi^t(a)\, u^t` and predicts :math:`\pi^{t-1}(a)\, m^t` (Mao et al. 2024,
Algorithm 1, with log-barrier OFTRL as the base learner). The swap regret is at most the sum of
the copies' external regrets, so the dynamics aim at a correlated equilibrium.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax

from ._learner import BUILD_WRAPPERS, Learner, insert_axis
from ._oftrl import log_barrier_oftrl
from ._regularizers import stationary_distribution

__all__ = ["SwapState", "blum_mansour"]


class SwapState(NamedTuple):
    """State of a Blum–Mansour learner.

    Attributes
    ----------
    base : the base learners' state, for strategies of shape ``(..., A, A)`` (for the default
        action axis ``-1``): row ``a`` belongs to the copy of recommendation ``a``.
    last_strategy : shape ``(..., A)``
        The strategy played last, :math:`\\pi^{t-1}` before ``play`` and :math:`\\pi^t` after it:
        it scales the prediction and the utility fed to each copy.
    """

    base: Any
    last_strategy: jax.Array


def blum_mansour(base: Callable[[int], Learner] = log_barrier_oftrl, axis: int = -1) -> Learner:
    """The Blum–Mansour reduction over the base learner ``base(axis) -> Learner`` (by default
    log-barrier OFTRL: Algorithm 1's BM-OFTRL).

    ``axis`` is the action axis of strategies and utilities; the base learners' rows sit at
    ``(axis - 1, axis)`` of their arrays.
    """
    base_learner = base(axis)
    if base_learner.propose is not None:
        raise ValueError("the Blum–Mansour reduction takes learners of one utility query per iteration (no propose)")
    tail = (slice(None),) * (-axis - 1)
    rows_at = (..., slice(None), None, *tail)  # pi(a) as a column over the recommendations a
    cols_at = (..., None, slice(None), *tail)  # a vector over the played actions b, one per row

    def init(shape, dtype) -> SwapState:
        num_actions = shape[axis]
        base_state = base_learner.init(insert_axis(tuple(shape), axis, num_actions), dtype)
        return SwapState(base_state, jax.numpy.full(shape, 1.0 / num_actions, dtype))

    def play(state: SwapState, prediction, eta, decay):
        # Copy a predicts pi^{t-1}(a) m^t: the share of the utility it last received.
        base_prediction = state.last_strategy[rows_at] * prediction[cols_at]
        rows, base_state = base_learner.play(state.base, base_prediction, eta, decay)
        strategy = stationary_distribution(rows, axis=axis)
        return strategy, SwapState(base_state, strategy)

    def observe(state: SwapState, utility, decay, eta=None) -> SwapState:
        share = state.last_strategy[rows_at] * utility[cols_at]
        return SwapState(base_learner.observe_with(state.base, share, decay, eta), state.last_strategy)

    return Learner(init, play, observe, observe_takes_eta=base_learner.observe_takes_eta)


@dataclass(frozen=True)
class SwapBuild:
    """``build(axis)`` of the Blum–Mansour reduction over ``base`` (a value, so that two
    reductions over the same base compare equal and share their compiled loops)."""

    base: Callable[[int], Learner]

    def __call__(self, axis: int) -> Learner:
        return blum_mansour(self.base, axis)


BUILD_WRAPPERS.append(SwapBuild)
