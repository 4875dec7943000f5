"""Exact CE/CCE gaps of a run's output policy at its checkpoints, where the game is small enough.

Shared by ``markovgames run --exact`` and sweeps with ``exact = true`` (of a bandit run's output
policy too, `exact_prefix_gaps`): each checkpoint ``T'``
gets ``exact_ce_gap`` and ``exact_cce_gap`` (with their per-player values), or ``None`` and the
reason (``*_skipped``) where the evaluation would be too large.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...dynamics import RunResult
from ...evaluation import (
    DEFAULT_MAX_WORK,
    CCEGapResult,
    CEGapResult,
    EvaluationTooLarge,
    exact_cce_gap,
    exact_ce_gap,
)
from ...games import GameValidationError, MarkovGame
from ...policies import IndexChainPolicy, VisitChainPolicy

__all__ = ["exact_checkpoint_gaps", "exact_prefix_gaps", "exact_policy_gaps", "EXACT_FIELDS"]

#: The gaps added to each checkpoint, each with ``_per_player`` and, when left out, ``_skipped``.
EXACT_FIELDS = ("exact_ce_gap", "exact_cce_gap")


def exact_checkpoint_gaps(
    result: RunResult, checkpoints: Sequence[int], *, max_work: float | None = DEFAULT_MAX_WORK
) -> dict[int, dict[str, Any]]:
    """Per checkpoint ``T'`` the exact CE and CCE gaps of the output policy after ``T'`` iterations.

    Parameters
    ----------
    result : RunResult
        A run that kept its whole trajectory.
    checkpoints : the prefixes ``T'``.
    max_work : float or None
        Passed to [`exact_ce_gap`][markovgames.evaluation.exact_ce_gap] and
        [`exact_cce_gap`][markovgames.evaluation.exact_cce_gap].

    Returns
    -------
    dict
        ``{T': {"exact_ce_gap": float | None, "exact_ce_gap_per_player": list | None, ...}}``; a gap
        that is too large to compute ([`EvaluationTooLarge`][markovgames.evaluation.EvaluationTooLarge], or a
        sparse game too large for the dense arrays exact evaluation uses) is ``None`` with the
        reason in ``"exact_ce_gap_skipped"`` / ``"exact_cce_gap_skipped"``.
    """
    return {
        int(T_prime): exact_policy_gaps(result.game, IndexChainPolicy.from_run(result, int(T_prime)), max_work=max_work)
        for T_prime in checkpoints
    }


def exact_prefix_gaps(
    game: MarkovGame, policy: VisitChainPolicy, checkpoints: Sequence[int], *, max_work: float | None = DEFAULT_MAX_WORK
) -> dict[int, dict[str, Any]]:
    """`exact_checkpoint_gaps` for a bandit run's output policy: its prefix after ``K'`` rounds at
    every checkpoint ``K'`` (``policy.prefix(K')``)."""
    return {int(k): exact_policy_gaps(game, policy.prefix(int(k)), max_work=max_work) for k in checkpoints}


def exact_policy_gaps(game: MarkovGame, policy, *, max_work: float | None = DEFAULT_MAX_WORK) -> dict[str, Any]:
    """The exact CE and CCE gaps of one policy, with their per-player values, or ``None`` and the
    reason (``*_skipped``) where the evaluation would be too large."""
    fields: dict[str, Any] = {}
    evaluators: tuple[Callable[..., CEGapResult | CCEGapResult], ...] = (exact_ce_gap, exact_cce_gap)
    for name, fn in zip(EXACT_FIELDS, evaluators, strict=True):
        try:
            res = fn(game, policy, max_work=max_work)
            fields[name] = float(res.gap)
            fields[name + "_per_player"] = [float(v) for v in res.per_player]
        except (EvaluationTooLarge, GameValidationError) as err:
            fields[name] = None
            fields[name + "_per_player"] = None
            fields[name + "_skipped"] = str(err)
    return fields
