"""Optimistic Hedge written again in user code, to run inside markovgames' compiled loop.

    markovgames run --game paper --algorithm examples/custom_learner.py:ALGORITHM -T 10000 --out runs/mine

gives the same numbers as ``--algorithm hedge+smooth`` (to 1e-12), batched, on a GPU, with the
certified CE/CCE gaps of every prefix. ``examples/custom_learner.py:LEARNER+stage`` runs the same
learner with the stage-based value update. The guide "Write your own learner" walks through it.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from markovgames.dynamics import Algorithm
from markovgames.learners import Learner, LearnerSpec


class HedgeState(NamedTuple):
    """What the learner carries between iterations: ``G``, its normalised cumulative utility."""

    cumulative: jax.Array


def my_hedge(axis: int) -> Learner:
    """Optimistic Hedge whose action axis is ``axis``; every other axis is an independent copy."""

    def init(shape, dtype):
        # shape is the shape of a strategy; G starts at zero, so the first play is uniform.
        return HedgeState(jnp.zeros(shape, dtype))

    def play(state, prediction, eta, decay):
        # pi^t = softmax(eta (rho_t G^{t-1} + m^t)): decay = rho_t carries the value update's weights.
        logits = eta * (decay * state.cumulative + prediction)
        # XLA may compute the logits twice (for the max and for the exponential) with different
        # roundings; the clamp keeps the largest term at exp(0) = 1, as in exact arithmetic.
        weights = jnp.exp(jnp.minimum(logits - jnp.max(logits, axis=axis, keepdims=True), 0.0))
        return weights / jnp.sum(weights, axis=axis, keepdims=True), state

    def observe(state, utility, decay):
        # G^t = rho_t G^{t-1} + u^t: the weighted sum of utilities, divided by the current weight.
        return HedgeState(decay * state.cumulative + utility)

    return Learner(init, play, observe)


LEARNER = LearnerSpec(
    "my-hedge",
    my_hedge,
    description="optimistic Hedge, written in user code",
    citation="Syrgkanis et al., NeurIPS 2015",
)

ALGORITHM = Algorithm(LEARNER, "smooth")
