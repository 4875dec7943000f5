"""Per-state no-regret learners (pure ``init``/``play``/``observe`` functions) and their argmax maps."""

from ._oftrl import Learner, OFTRLState, SwapState, blum_mansour, log_barrier_oftrl, oftrl, optimistic_hedge
from ._regularizers import NEWTON_MAX_ITERATIONS, entropy_argmax, log_barrier_argmax, stationary_distribution

__all__ = [
    "Learner",
    "OFTRLState",
    "SwapState",
    "oftrl",
    "optimistic_hedge",
    "log_barrier_oftrl",
    "blum_mansour",
    "entropy_argmax",
    "log_barrier_argmax",
    "stationary_distribution",
    "NEWTON_MAX_ITERATIONS",
]
