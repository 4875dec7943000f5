"""The three learning dynamics of Mao et al. (2024) and their non-optimistic baselines (SEMANTICS §3)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..games import MarkovGame
from ._schedules import theory_eta_smooth

__all__ = ["Algorithm", "ALGORITHMS", "get_algorithm", "LearningRate", "resolve_learning_rate"]


@dataclass(frozen=True)
class Algorithm:
    """A learning dynamic: a per-state learner, a value update and an output policy.

    Attributes
    ----------
    name : the public name (``smooth_ce``, ``stage_cce``, ``smooth_cce``).
    learner : ``"bm_log_barrier"`` (Blum–Mansour over log-barrier OFTRL) or ``"hedge"`` (negative entropy).
    value_update : ``"smooth"`` (``alpha_t``, Algorithm 1) or ``"stage"`` (``L_tau``, Algorithm 2).
    concept : the equilibrium whose gap the paper reports for it (``"ce"`` or ``"cce"``).
    description : one line for listings.
    """

    name: str
    learner: Literal["bm_log_barrier", "hedge"]
    value_update: Literal["smooth", "stage"]
    concept: Literal["ce", "cce"]
    description: str

    @property
    def output_policy(self) -> str:
        """``"algorithm3"`` (smooth index chain, ``t_0 = T``) or ``"algorithm4"`` (stage mixture)."""
        return "algorithm3" if self.value_update == "smooth" else "algorithm4"


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm(
            "smooth_ce",
            "bm_log_barrier",
            "smooth",
            "ce",
            "Algorithm 1: BM-OFTRL (log-barrier) with smooth value updates -> CE",
        ),
        Algorithm(
            "stage_cce",
            "hedge",
            "stage",
            "cce",
            "Algorithm 2: optimistic Hedge with stage-based value updates -> CCE",
        ),
        Algorithm(
            "smooth_cce",
            "hedge",
            "smooth",
            "cce",
            "Section 5's 'Smooth OFTRL CCE': optimistic Hedge with smooth value updates -> CCE",
        ),
    )
}


def get_algorithm(name: str) -> Algorithm:
    """Look up an algorithm by name; the error lists the choices."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(ALGORITHMS)}") from None


#: A learning rate: a positive number (constant) or ``"theory"`` (the paper's theorem rates).
LearningRate = float | Literal["theory"]


def resolve_learning_rate(eta: LearningRate, algorithm: Algorithm, game: MarkovGame) -> tuple[float, bool]:
    """Return ``(eta_scale, per_stage_theory)``.

    For a constant rate: ``(eta, False)``. For ``"theory"``: smooth algorithms get Theorem 1's
    ``1/(256 N H sqrt(H A_max))`` (the paper gives none for smooth_cce; we use the same);
    ``stage_cce`` gets ``(1.0, True)``: the per-stage rate ``1/(N max(1, ln L_tau)^4)`` is applied
    iteration by iteration.
    """
    if isinstance(eta, str):
        if eta != "theory":
            raise ValueError(f"learning rate must be a positive number or 'theory', got {eta!r}")
        if algorithm.value_update == "stage":
            return 1.0, True
        return theory_eta_smooth(game.num_players, game.horizon, max(game.num_actions)), False
    if isinstance(eta, bool) or not isinstance(eta, (int, float)):
        raise ValueError(f"learning rate must be a positive number or 'theory', got {eta!r}")
    eta = float(eta)
    if not math.isfinite(eta) or eta <= 0.0:
        raise ValueError(f"learning rate must be a positive finite number, got {eta!r}")
    return eta, False
