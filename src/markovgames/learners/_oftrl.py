r"""Per-state no-regret learners as pairs of pure functions (optax style).

A :class:`Learner` runs one independent copy per index of its state arrays other than the
action axis (e.g. per step ``h`` and state ``s``, and per run in the compiled loop); all its
functions are pure and also vectorise with ``jax.vmap``.

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
    """State of (weighted) OFTRL: the normalised cumulative utility ``G``, shape ``(..., A)`` (action axis ``-1``)."""

    cumulative: jax.Array


class SwapState(NamedTuple):
    """State of a Blum–Mansour learner.

    Attributes
    ----------
    cumulative : shape ``(..., A, A)`` (for the default action axis ``-1``)
        Row ``a`` is the normalised cumulative utility of the base learner for recommendation ``a``.
    last_strategy : shape ``(..., A)``
        ``pi^{t-1}``, which scales the prediction fed to each base learner.
    """

    cumulative: jax.Array
    last_strategy: jax.Array


class Learner(NamedTuple):
    """A no-regret learner as pure functions.

    ``init(batch_shape, num_actions, dtype) -> state``
        The state before iteration 1 (uniform ``pi^0``, zero cumulative utility); the action
        axis is inserted into ``batch_shape`` at the learner's ``axis``.
    ``play(state, prediction, eta, decay) -> strategy``
        The strategy ``pi^t`` (shape ``batch_shape + (A,)`` for the default ``axis=-1``), from ``G^{t-1}`` decayed by
        ``decay`` (``rho_t``) plus ``prediction`` (``m^t``), scaled by the learning rate ``eta``.
    ``observe(state, strategy, utility, decay) -> state``
        Feed the utility vector ``u^t`` (same shape as the strategy) after playing ``strategy``.
    """

    init: Callable[..., NamedTuple]
    play: Callable[..., jax.Array]
    observe: Callable[..., NamedTuple]


def _insert(batch_shape, axis: int, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """``batch_shape`` with the axes ``sizes`` inserted so that the last of them sits at ``axis``."""
    if not isinstance(axis, int) or axis >= 0 or -axis - 1 > len(batch_shape):
        raise ValueError(f"axis must be negative with at most {len(batch_shape)} axes after it, got {axis!r}")
    cut = len(batch_shape) + axis + 1
    return (*batch_shape[:cut], *sizes, *batch_shape[cut:])


def oftrl(argmax: Callable[..., jax.Array], axis: int = -1) -> Learner:
    """Weighted OFTRL with the regularised argmax ``argmax`` (see :mod:`._regularizers`).

    ``axis`` is the action axis of every array (negative; ``-1`` by default). The axes after it
    are independent copies like the leading ones: the compiled loop keeps a trailing run axis.
    """

    def init(batch_shape, num_actions: int, dtype=jnp.float64) -> OFTRLState:
        return OFTRLState(jnp.zeros(_insert(batch_shape, axis, (num_actions,)), dtype))

    def play(state: OFTRLState, prediction, eta, decay) -> jax.Array:
        return argmax(eta * (decay * state.cumulative + prediction), axis=axis)

    def observe(state: OFTRLState, strategy, utility, decay) -> OFTRLState:
        del strategy  # external-regret learners do not need their own play
        return OFTRLState(decay * state.cumulative + utility)

    return Learner(init, play, observe)


def optimistic_hedge(axis: int = -1) -> Learner:
    """OFTRL with the negative-entropy regulariser (optimistic Hedge)."""
    return oftrl(entropy_argmax, axis)


def log_barrier_oftrl(axis: int = -1) -> Learner:
    """OFTRL with the log-barrier regulariser ``R(x) = -sum_k log x_k`` (Algorithm 1's base learner)."""
    return oftrl(log_barrier_argmax, axis)


def blum_mansour(argmax: Callable[..., jax.Array] = log_barrier_argmax, axis: int = -1) -> Learner:
    """Blum–Mansour swap-regret reduction over weighted OFTRL base learners (BM-OFTRL, Algorithm 1).

    ``axis`` is the action axis of strategies and utilities; the state's ``(A, A)`` matrix of
    base learners' rows sits at ``(axis - 1, axis)``.
    """
    tail = (slice(None),) * (-axis - 1)

    def init(batch_shape, num_actions: int, dtype=jnp.float64) -> SwapState:
        return SwapState(
            jnp.zeros(_insert(batch_shape, axis, (num_actions, num_actions)), dtype),
            jnp.full(_insert(batch_shape, axis, (num_actions,)), 1.0 / num_actions, dtype),
        )

    def play(state: SwapState, prediction, eta, decay) -> jax.Array:
        # Base learner a predicts pi^{t-1}(a) m^t: the share of the utility it last received.
        base_prediction = state.last_strategy[(..., slice(None), None, *tail)] * prediction[(..., None, slice(None), *tail)]
        rows = argmax(eta * (decay * state.cumulative + base_prediction), axis=axis)
        return stationary_distribution(rows, axis=axis)

    def observe(state: SwapState, strategy, utility, decay) -> SwapState:
        share = strategy[(..., slice(None), None, *tail)] * utility[(..., None, slice(None), *tail)]
        return SwapState(decay * state.cumulative + share, strategy)

    return Learner(init, play, observe)
