r"""Per-state no-regret learners: pure ``init``/``play``/``observe`` functions and their specifications.

A [`Learner`][markovgames.learners.Learner] is three pure functions over a ``NamedTuple`` state (see
`markovgames.learners._learner` for the protocol the compiled loop follows); a
[`LearnerSpec`][markovgames.learners.LearnerSpec] names one and says how to build it for an action
axis. The built-in ones (`BUILTIN_LEARNERS`): optimistic Hedge, log-barrier OFTRL, predictive regret
matching+, the projected-gradient learners (optimistic gradient, extragradient, ExRM+, smooth PRM+;
`markovgames.learners._projected`), and the Blum–Mansour swap-regret reduction over each
([`swap_regret`][markovgames.learners.swap_regret]). A learner written by a user with these pieces
runs in the same compiled loop (docs: "Write your own learner");
[`materialized`][markovgames.learners.materialized] is for its speed there, and
[`exact_quotient`][markovgames.learners.exact_quotient] for a normaliser that must round once,
[`regret_vector`][markovgames.learners.regret_vector] for a regret vector that is exactly 0 at a tie.
"""

from .._small_axes import exact_quotient, materialized, regret_vector
from ._builtin import (
    BM_HEDGE,
    BM_LOGBARRIER,
    BM_RM_PLUS,
    BUILTIN_LEARNERS,
    EXRM_PLUS,
    EXTRAGRADIENT,
    HEDGE,
    LOGBARRIER,
    OGDA,
    RM_PLUS,
    SPRM_PLUS,
    swap_regret,
)
from ._learner import Learner, LearnerError, LearnerSpec, insert_axis
from ._oftrl import OFTRLState, log_barrier_oftrl, oftrl, optimistic_hedge
from ._projected import (
    ProjectedState,
    extragradient,
    extragradient_rm_plus,
    optimistic_gradient,
    project_chopped_cone,
    project_simplex,
    smooth_predictive_rm_plus,
)
from ._regularizers import (
    NEWTON_MAX_ITERATIONS,
    entropy_argmax,
    log_barrier_argmax,
    stationary_distribution,
)
from ._rm_plus import RegretMatchingState, predictive_regret_matching_plus
from ._swap import SwapState, blum_mansour

__all__ = [
    "Learner",
    "LearnerError",
    "LearnerSpec",
    "insert_axis",
    "materialized",
    "exact_quotient",
    "regret_vector",
    "BUILTIN_LEARNERS",
    "HEDGE",
    "LOGBARRIER",
    "RM_PLUS",
    "OGDA",
    "EXTRAGRADIENT",
    "EXRM_PLUS",
    "SPRM_PLUS",
    "BM_HEDGE",
    "BM_LOGBARRIER",
    "BM_RM_PLUS",
    "swap_regret",
    "OFTRLState",
    "RegretMatchingState",
    "SwapState",
    "oftrl",
    "optimistic_hedge",
    "log_barrier_oftrl",
    "predictive_regret_matching_plus",
    "blum_mansour",
    "ProjectedState",
    "optimistic_gradient",
    "extragradient",
    "extragradient_rm_plus",
    "smooth_predictive_rm_plus",
    "project_simplex",
    "project_chopped_cone",
    "entropy_argmax",
    "log_barrier_argmax",
    "stationary_distribution",
    "NEWTON_MAX_ITERATIONS",
]
