"""Exact (coarse) correlated equilibria of Markov games by backward induction and linear programming;
the Shapley value of two-player constant-sum discounted games."""

from ._lp import (
    DEFAULT_HIGHS_OPTIONS,
    INCENTIVE_TOLERANCE,
    MAX_JOINT_ACTIONS,
    EquilibriumSolution,
    EquilibriumSolverError,
    SolverStatus,
    StageIncentives,
    check_objective,
    solve_equilibrium,
    stage_game_incentives,
)
from ._shapley import ShapleySolution, matrix_game_value, shapley_value

__all__ = [
    "shapley_value",
    "matrix_game_value",
    "ShapleySolution",
    "solve_equilibrium",
    "check_objective",
    "stage_game_incentives",
    "EquilibriumSolution",
    "StageIncentives",
    "SolverStatus",
    "EquilibriumSolverError",
    "MAX_JOINT_ACTIONS",
    "INCENTIVE_TOLERANCE",
    "DEFAULT_HIGHS_OPTIONS",
]
