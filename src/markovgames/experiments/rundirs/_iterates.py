r"""The iterates themselves, beside the output policy: the uniform average's Nash and duality gaps.

The literature on learning in games also measures the *average iterate*: the uniform average of
the product policies played,

.. math:: \bar\pi^{T'}_{h,i}(\cdot \mid s) = \frac{1}{T'} \sum_{t \le T'} \pi^t_{h,i}(\cdot \mid s),

a product Markov policy (no common randomness; for a normal-form game, the textbook average
strategies). Its exact Nash gap is computed by backward induction
([`nash_gap`][markovgames.evaluation.nash_gap]: each player's best response against the others'
average). In a constant-sum game (`MarkovGame.is_constant_sum`: ``sum_i V_i`` is the same for
every policy; two players: zero-sum up to an affine map), the sum of the players' best-response
gains :math:`\sum_i (V^\dagger_i - V_i)` is the *duality gap*, reported for the average and for
the last iterate. Unlike the output policies (Algorithms 3 and 4), the average iterate of a
general-sum game carries no guarantee: it is what papers on last- and average-iterate convergence
plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...evaluation import nash_gap
from ...games import MarkovGame

__all__ = ["average_iterate_fields", "duality_gap_field"]


def duality_gap_field(prefix: str, value, best_response, game: MarkovGame) -> dict[str, float]:
    """``{PREFIX_duality_gap: sum_i (BR_i - V_i)}`` for a constant-sum game, else ``{}``."""
    if not game.is_constant_sum:
        return {}
    return {f"{prefix}_duality_gap": float(np.sum(np.asarray(best_response) - np.asarray(value)))}


def average_iterate_fields(
    game: MarkovGame, policies: Sequence[np.ndarray], checkpoints: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """Per checkpoint ``T'``: the uniform average of the first ``T'`` iterates, its value, its Nash
    gap (and per player) and, in a constant-sum game, its duality gap.

    ``policies``: per player ``(T, H, S, A_i)``, row ``t - 1`` the iterate ``pi^t`` (the whole
    trajectory, read into memory). The running sums are accumulated in float64 in one pass.
    """
    wanted = sorted(set(int(t) for t in checkpoints))
    total = int(policies[0].shape[0])
    if not wanted or wanted[0] < 1 or wanted[-1] > total:
        raise ValueError(f"checkpoints must lie in 1..{total}, got {wanted}")
    sums = [np.zeros(p.shape[1:], dtype=np.float64) for p in policies]
    out: dict[int, dict[str, Any]] = {}
    done = 0
    for t in wanted:
        for i, p in enumerate(policies):
            sums[i] += np.asarray(p[done:t], dtype=np.float64).sum(axis=0)
        done = t
        average = [s / t for s in sums]
        res = nash_gap(game, average)
        out[t] = {
            "average_iterate_value": [float(v) for v in res.value],
            "average_iterate_nash_gap": float(res.gap),
            "average_iterate_nash_gap_per_player": [float(v) for v in res.per_player],
            **duality_gap_field("average_iterate", res.value, res.best_response_value, game),
        }
    return out
