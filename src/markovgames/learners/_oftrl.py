r"""Weighted optimistic follow-the-regularised-leader (OFTRL): optimistic Hedge and log-barrier OFTRL.

Weighted OFTRL (Syrgkanis, Agarwal, Luo and Schapire, NeurIPS 2015; Mao et al. 2024, eq. (3) and
Algorithm 1) plays

.. math:: x^t = \arg\max_{x\in\Delta} \; \eta \Big\langle x, \tfrac{1}{w_t}\Big(\sum_{j<t} w_j u^j
          + w_t m^t\Big)\Big\rangle - \mathcal R(x)
          = \arg\max_x \; \eta\langle x, \rho_t G^{t-1} + m^t\rangle - \mathcal R(x),

where :math:`G^{t} = \rho_t G^{t-1} + u^t = \sum_{j\le t} w_j u^j / w_t` is the *normalised*
cumulative utility (``decay`` :math:`\rho_t = w_{t-1}/w_t`, see [`markovgames.dynamics`][markovgames.dynamics]) and
:math:`m^t` the prediction (the last utility for optimistic learners, ``0`` for the
non-optimistic baselines). Unweighted OFTRL is ``decay = 1``.

* Negative entropy :math:`\mathcal R(x) = \sum_k x_k \log x_k`: optimistic Hedge,
  :math:`x^t = \mathrm{softmax}(\eta(\rho_t G^{t-1} + m^t))` (Algorithm 2 and the smooth CCE variant).
* Log-barrier :math:`\mathcal R(x) = -\sum_k \log x_k`: the base learner of Algorithm 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ._learner import Learner
from ._regularizers import entropy_argmax, log_barrier_argmax

__all__ = ["OFTRLState", "oftrl", "optimistic_hedge", "log_barrier_oftrl"]


class OFTRLState(NamedTuple):
    """State of (weighted) OFTRL: the normalised cumulative utility ``G``, the shape of a strategy."""

    cumulative: jax.Array


def oftrl(argmax: Callable[..., jax.Array], axis: int = -1) -> Learner:
    """Weighted OFTRL with the regularised argmax ``argmax`` (see `._regularizers`).

    ``axis`` is the action axis of every array (negative; ``-1`` by default). The axes after it
    are independent copies like the leading ones: the compiled loop keeps a trailing run axis.
    """

    def init(shape, dtype=jnp.float64) -> OFTRLState:
        return OFTRLState(jnp.zeros(shape, dtype))

    def play(state: OFTRLState, prediction, eta, decay):
        return argmax(eta * (decay * state.cumulative + prediction), axis=axis), state

    def observe(state: OFTRLState, utility, decay) -> OFTRLState:
        return OFTRLState(decay * state.cumulative + utility)

    return Learner(init, play, observe)


def optimistic_hedge(axis: int = -1) -> Learner:
    """OFTRL with the negative-entropy regulariser (optimistic Hedge)."""
    return oftrl(entropy_argmax, axis)


def log_barrier_oftrl(axis: int = -1) -> Learner:
    """OFTRL with the log-barrier regulariser ``R(x) = -sum_k log x_k`` (Algorithm 1's base learner)."""
    return oftrl(log_barrier_argmax, axis)
