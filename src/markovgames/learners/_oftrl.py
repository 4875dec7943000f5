r"""Per-state no-regret learners as pairs of pure functions (optax style).

A :class:`Learner` runs one independent copy per leading index (e.g. per step ``h`` and state
``s``) of its state arrays; all its functions are pure and vectorise with ``jax.vmap``.

Weighted optimistic FTRL (Syrgkanis et al. 2015; Mao et al. 2024, eq. (3) and Algorithm 1)
plays

.. math:: x^t = \arg\max_{x\in\Delta} \; \eta \Big\langle x, \tfrac{1}{w_t}\Big(\sum_{j<t} w_j u^j
          + w_t m^t\Big)\Big\rangle - \mathcal R(x)
          = \arg\max_x \; \eta\langle x, \rho_t G^{t-1} + m^t\rangle - \mathcal R(x),

where :math:`G^{t} = \rho_t G^{t-1} + u^t = \sum_{j\le t} w_j u^j / w_t` is the *normalised*
cumulative utility (``decay`` :math:`\rho_t = w_{t-1}/w_t`, see
:mod:`markovgames.dynamics._schedules`) and :math:`m^t` the prediction (the last utility for
optimistic learners, ``0`` for the non-optimistic baselines). Unweighted FTRL is ``decay = 1``.

The Blum–Mansour reduction (Blum and Mansour 2007) turns ``A`` copies of such a learner, one per
recommended action ``a``, into a no-swap-regret learner: copy ``a`` plays the row
:math:`q^{t,a}`, the strategy :math:`\pi^t` is the stationary distribution of the matrix with
rows :math:`q^{t,a}`, and copy ``a`` observes :math:`\pi^t(a) u^t` (and predicts
:math:`\pi^{t-1}(a) m^t`).

Uncoupled by construction: every function sees only its own player's strategy and utility.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from ._regularizers import entropy_argmax, log_barrier_argmax, stationary_distribution

__all__ = [
    "Learner",
    "OFTRLState",
    "SwapState",
    "oftrl",
    "optimistic_hedge",
    "log_barrier_oftrl",
    "blum_mansour",
]


class OFTRLState(NamedTuple):
    """State of (weighted) OFTRL: the normalised cumulative utility ``G``, shape ``(..., A)``."""

    cumulative: jax.Array


class SwapState(NamedTuple):
    """State of a Blum–Mansour learner.

    Attributes
    ----------
    cumulative : shape ``(..., A, A)``
        Row ``a`` is the normalised cumulative utility of the base learner for recommendation ``a``.
    last_strategy : shape ``(..., A)``
        ``pi^{t-1}``, which scales the prediction fed to each base learner.
    """

    cumulative: jax.Array
    last_strategy: jax.Array


class Learner(NamedTuple):
    """A no-regret learner as pure functions.

    ``init(batch_shape, num_actions, dtype) -> state``
        The state before iteration 1 (uniform ``pi^0``, zero cumulative utility).
    ``play(state, prediction, eta, decay) -> strategy``
        The strategy ``pi^t`` of shape ``batch_shape + (A,)``, from ``G^{t-1}`` decayed by
        ``decay`` (``rho_t``) plus ``prediction`` (``m^t``), scaled by the learning rate ``eta``.
    ``observe(state, strategy, utility, decay) -> state``
        Feed the utility vector ``u^t`` (same shape as the strategy) after playing ``strategy``.
    """

    init: Callable[..., NamedTuple]
    play: Callable[..., jax.Array]
    observe: Callable[..., NamedTuple]


def oftrl(argmax: Callable[[jax.Array], jax.Array]) -> Learner:
    """Weighted OFTRL with the regularised argmax ``argmax`` (see :mod:`._regularizers`)."""

    def init(batch_shape, num_actions: int, dtype=jnp.float64) -> OFTRLState:
        return OFTRLState(jnp.zeros((*batch_shape, num_actions), dtype))

    def play(state: OFTRLState, prediction, eta, decay) -> jax.Array:
        return argmax(eta * (decay * state.cumulative + prediction))

    def observe(state: OFTRLState, strategy, utility, decay) -> OFTRLState:
        del strategy  # external-regret learners do not need their own play
        return OFTRLState(decay * state.cumulative + utility)

    return Learner(init, play, observe)


def optimistic_hedge() -> Learner:
    """OFTRL with the negative-entropy regulariser (optimistic Hedge)."""
    return oftrl(entropy_argmax)


def log_barrier_oftrl() -> Learner:
    """OFTRL with the log-barrier regulariser ``R(x) = -sum_k log x_k`` (Algorithm 1's base learner)."""
    return oftrl(log_barrier_argmax)


def blum_mansour(argmax: Callable[[jax.Array], jax.Array] = log_barrier_argmax) -> Learner:
    """Blum–Mansour swap-regret reduction over weighted OFTRL base learners (BM-OFTRL, Algorithm 1)."""

    def init(batch_shape, num_actions: int, dtype=jnp.float64) -> SwapState:
        return SwapState(
            jnp.zeros((*batch_shape, num_actions, num_actions), dtype),
            jnp.full((*batch_shape, num_actions), 1.0 / num_actions, dtype),
        )

    def play(state: SwapState, prediction, eta, decay) -> jax.Array:
        # Base learner a predicts pi^{t-1}(a) m^t: the share of the utility it last received.
        base_prediction = state.last_strategy[..., :, None] * prediction[..., None, :]
        rows = argmax(eta * (decay * state.cumulative + base_prediction))
        return stationary_distribution(rows)

    def observe(state: SwapState, strategy, utility, decay) -> SwapState:
        share = strategy[..., :, None] * utility[..., None, :]
        return SwapState(decay * state.cumulative + share, strategy)

    return Learner(init, play, observe)
