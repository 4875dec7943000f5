"""The learning dynamics of Mao et al. (2024): algorithms, schedules, and the compiled engine."""

from ._algorithms import ALGORITHMS, Algorithm, LearningRate, get_algorithm, resolve_learning_rate
from ._index_kernel import IndexKernel, TrajectorySuffix, trajectory_suffix
from ._run import DTYPES, BatchRunResult, RunResult, max_learning_rate, run, run_batch
from ._schedules import (
    StageSchedule,
    oftrl_decay,
    smooth_step_size,
    stage_lengths,
    stage_schedule,
    theory_eta_smooth,
    theory_eta_stage,
)

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "LearningRate",
    "get_algorithm",
    "resolve_learning_rate",
    "run",
    "run_batch",
    "max_learning_rate",
    "IndexKernel",
    "TrajectorySuffix",
    "trajectory_suffix",
    "RunResult",
    "BatchRunResult",
    "DTYPES",
    "StageSchedule",
    "stage_schedule",
    "stage_lengths",
    "smooth_step_size",
    "oftrl_decay",
    "theory_eta_smooth",
    "theory_eta_stage",
]
