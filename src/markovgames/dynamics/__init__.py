"""The learning dynamics: algorithms as compositions of a learner and a value update, and the compiled engine.

* [`Algorithm`][markovgames.dynamics.Algorithm],
  [`get_algorithm`][markovgames.dynamics.get_algorithm]: a per-state learner
  ([`markovgames.learners`][markovgames.learners]) and a value update (`SMOOTH`, Algorithm 1
  with Algorithm 3's output policy, and the same with uniform and linear averaging,
  `SMOOTH_UNIFORM` and `SMOOTH_LINEAR`; `STAGE`, Algorithm 2 with Algorithm 4's), found by name
  (``LEARNER+UPDATE``, the paper's ``smooth_ce``, ``stage_cce``, ``smooth_cce``, a user's
  ``file.py:NAME``, installed plugins).
* [`run`][markovgames.dynamics.run], [`run_batch`][markovgames.dynamics.run_batch]: the compiled
  loop, with the output policy's value and certified CE/CCE bounds for every prefix.
* Discounted games (docs/discounted.md): the discounted smooth update (`DISCOUNTED_SMOOTH`, and
  `DISCOUNTED_SMOOTH_UNIFORM`, `DISCOUNTED_SMOOTH_LINEAR`) in the same loop, ``LEARNER+discounted-smooth``;
  [`run`][markovgames.dynamics.run] on a discounted game gives a
  [`DiscountedRunResult`][markovgames.dynamics.DiscountedRunResult] (value estimates, and the exact
  values and Nash gaps of the last and the weighted average iterates).
* [`certify`][markovgames.dynamics.certify]: the same per-prefix values and bounds for any policy sequence.
* The iterates' own product policies, evaluated exactly inside the loop where asked for: the last
  iterate (``last_iterate``) and the state-wise weighted average of the iterates with the value
  update's own weights (``weighted_average``; `ValueUpdate.average_weights`: the smooth update's
  ``alpha_T^t``, the average of Zhang et al. 2022 and Yang and Ma 2023), with their values, Nash
  gaps and duality gaps.
* The catalogue by paper (`markovgames._papers`, ``markovgames algorithms show NAME``) and the
  theorem rates by paper (``eta="theory:mao2024"``; ``"theory"`` alone is that one).
* A learner that is not built in is guarded: its functions are checked when the loop starts and
  every strategy it plays inside the loop (`LearnerOutputError`, `STRATEGY_TOLERANCE`).
* How the learners meet (`markovgames.dynamics._interplay`): the update order
  (``order="simultaneous"`` or ``"alternating"``, `ORDERS`), step-size schedules
  ([`StepSchedule`][markovgames.dynamics.StepSchedule], [`get_step_schedule`][markovgames.dynamics.get_step_schedule]:
  ``constant``, ``sqrt``, ``power:P``, a user's ``f(t)``), rates per player, and two-query learners.
* What the learners see (`markovgames.dynamics._feedback`): full information (the paper's) or a
  generative model's estimates, ``feedback="sampled:K"`` (`FEEDBACK_FORMS`,
  [`parse_feedback`][markovgames.dynamics.parse_feedback]), with one key per run from its seed
  ([`run_key_data`][markovgames.dynamics.run_key_data],
  [`iteration_uniforms`][markovgames.dynamics.iteration_uniforms]: the draws of an iteration).
* V-learning from play (docs/vlearning.md): [`run_vlearning`][markovgames.dynamics.run_vlearning]
  (``cce-v``, ``ce-v``, ``stage-v``), its output policy a
  [`VisitChainPolicy`][markovgames.policies.VisitChainPolicy].
* The schedules (step sizes, weights, stages, theory learning rates).
"""

from .._schedules import (
    StageSchedule,
    oftrl_decay,
    smooth_step_size,
    stage_lengths,
    stage_schedule,
    theory_eta_smooth,
    theory_eta_stage,
)
from ..policies import IndexKernel, TrajectorySuffix, trajectory_suffix
from ._algorithms import (
    ALGORITHMS,
    ENTRY_POINT_GROUP,
    VALUE_UPDATES,
    Algorithm,
    LearningRate,
    Registry,
    absolute_reference,
    builtin_algorithm,
    get_algorithm,
    get_learner,
    get_step_schedule,
    get_value_update,
    loaded_file_source,
    registered,
    resolve_learning_rate,
)
from ._certify import CertifiedCurve, certify
from ._checkpoint import RunStateError
from ._discounted import DISCOUNTED_SMOOTH, DISCOUNTED_SMOOTH_LINEAR, DISCOUNTED_SMOOTH_UNIFORM
from ._feedback import (
    FEEDBACK_FORMS,
    VLEARNING_ACTIONS,
    VLEARNING_STATES,
    Feedback,
    iteration_uniforms,
    parse_feedback,
    run_key_data,
)
from ._guard import STRATEGY_TOLERANCE, LearnerOutputError, check_learner
from ._interplay import ORDERS, STEP_SCHEDULES, StepSchedule, power_schedule
from ._run import (
    DTYPES,
    BatchRunResult,
    DiscountedBatchRunResult,
    DiscountedRunResult,
    RunResult,
    max_learning_rate,
    run,
    run_batch,
)
from ._smooth import SMOOTH, SMOOTH_LINEAR, SMOOTH_UNIFORM
from ._stage import STAGE
from ._trajectory import TrajectoryFileError
from ._value_update import ValueUpdate
from ._vlearning import (
    BANDIT_RATES,
    DEFAULT_BANDIT_RATE,
    DEFAULT_IX,
    IX_SCHEDULES,
    VLEARNING_ALGORITHMS,
    VLearningResult,
    bandit_estimate_moments,
    parse_bandit,
    run_vlearning,
    run_vlearning_batch,
    vlearning_uniforms,
)

__all__ = [
    "VLEARNING_ALGORITHMS",
    "DEFAULT_IX",
    "IX_SCHEDULES",
    "DEFAULT_BANDIT_RATE",
    "BANDIT_RATES",
    "VLEARNING_ACTIONS",
    "VLEARNING_STATES",
    "VLearningResult",
    "bandit_estimate_moments",
    "parse_bandit",
    "run_vlearning",
    "run_vlearning_batch",
    "vlearning_uniforms",
    "Algorithm",
    "ALGORITHMS",
    "VALUE_UPDATES",
    "ENTRY_POINT_GROUP",
    "SMOOTH",
    "SMOOTH_UNIFORM",
    "SMOOTH_LINEAR",
    "STAGE",
    "DISCOUNTED_SMOOTH",
    "DISCOUNTED_SMOOTH_UNIFORM",
    "DISCOUNTED_SMOOTH_LINEAR",
    "ValueUpdate",
    "Registry",
    "builtin_algorithm",
    "loaded_file_source",
    "get_algorithm",
    "get_learner",
    "get_value_update",
    "registered",
    "absolute_reference",
    "LearningRate",
    "resolve_learning_rate",
    "get_step_schedule",
    "StepSchedule",
    "STEP_SCHEDULES",
    "power_schedule",
    "ORDERS",
    "Feedback",
    "FEEDBACK_FORMS",
    "parse_feedback",
    "run_key_data",
    "iteration_uniforms",
    "run",
    "run_batch",
    "certify",
    "CertifiedCurve",
    "max_learning_rate",
    "RunResult",
    "BatchRunResult",
    "DiscountedRunResult",
    "DiscountedBatchRunResult",
    "RunStateError",
    "LearnerOutputError",
    "check_learner",
    "STRATEGY_TOLERANCE",
    "TrajectoryFileError",
    "DTYPES",
    "IndexKernel",
    "TrajectorySuffix",
    "trajectory_suffix",
    "StageSchedule",
    "stage_schedule",
    "stage_lengths",
    "smooth_step_size",
    "oftrl_decay",
    "theory_eta_smooth",
    "theory_eta_stage",
]
