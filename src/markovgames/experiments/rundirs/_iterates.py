r"""The iterates themselves, beside the output policy: their values, Nash gaps and duality gaps.

The literature on learning in games also measures the iterates' own product policies:

* the **weighted average** of the iterates with the value update's own weights,
  :math:`\bar\pi^{T'}_{h,i}(\cdot \mid s) = \sum_{t \le T'} w^{T'}_t \pi^t_{h,i}(\cdot \mid s)`
  (`markovgames._schedules.average_weights`: the smooth update's :math:`\alpha_{T'}^t`, the
  average Zhang et al. 2022 and Yang and Ma 2023 state their results for), carried in the compiled
  loop (``markovgames run --weighted-average``; fields ``weighted_average_*``);
* the **uniform average** :math:`\frac{1}{T'} \sum_{t \le T'} \pi^t_{h,i}(\cdot \mid s)`, computed
  from the trajectory (``markovgames run --uniform-average``, formerly ``--average-iterate``;
  fields ``uniform_average_*``, which files written before were calling ``average_iterate_*``:
  `checkpoint_field` reads either);
* the **last iterate** :math:`\pi^{T'}` (``--last-iterate``; fields ``last_iterate_*``).

Each is a product Markov policy (no common randomness; for a normal-form game, the textbook
average strategies), whose exact Nash gap is computed by backward induction
([`nash_gap`][markovgames.evaluation.nash_gap]: each player's best response against the others').
In a constant-sum game (`MarkovGame.is_constant_sum`: ``sum_i V_i`` is the same for every policy;
two players: zero-sum up to an affine map), the sum of the players' best-response gains
:math:`\sum_i (V^\dagger_i - V_i)` is the *duality gap*, reported too. Unlike the output policies
(Algorithms 3 and 4), these policies carry no guarantee in a general-sum game: they are what papers
on last- and average-iterate convergence measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...evaluation import nash_gap
from ...games import MarkovGame

__all__ = ["uniform_average_fields", "duality_gap_field", "evaluated_fields", "checkpoint_field", "LEGACY_FIELDS"]

#: The uniform average's fields as files written before the weighted average was added named them.
LEGACY_FIELDS = {
    f"uniform_average_{suffix}": f"average_iterate_{suffix}"
    for suffix in ("value", "nash_gap", "nash_gap_per_player", "duality_gap")
}


def checkpoint_field(record: dict[str, Any], key: str) -> Any:
    """``record[key]``, or a field's older name (`LEGACY_FIELDS`) in a file written before; ``None`` if neither."""
    if key in record:
        return record[key]
    old = LEGACY_FIELDS.get(key)
    return None if old is None else record.get(old)


def duality_gap_field(prefix: str, value, best_response, game: MarkovGame) -> dict[str, float]:
    """``{PREFIX_duality_gap: sum_i (BR_i - V_i)}`` for a constant-sum game, else ``{}``."""
    if not game.is_constant_sum:
        return {}
    return {f"{prefix}_duality_gap": float(np.sum(np.asarray(best_response) - np.asarray(value)))}


def evaluated_fields(prefix: str, value, best_response, game: MarkovGame | None = None) -> dict[str, Any]:
    """A checkpoint's fields of an evaluated product policy (``prefix``: ``last_iterate``,
    ``weighted_average``, ``uniform_average``): its value per player, its Nash gap (max over players
    of best response minus value) and the per-player gaps; with a constant-sum ``game``, its duality
    gap (their sum)."""
    gaps = np.asarray(best_response) - np.asarray(value)
    return {
        f"{prefix}_value": [float(x) for x in value],
        f"{prefix}_nash_gap": float(np.max(gaps)),
        f"{prefix}_nash_gap_per_player": [float(x) for x in gaps],
        **({} if game is None else duality_gap_field(prefix, value, best_response, game)),
    }


def uniform_average_fields(
    game: MarkovGame, policies: Sequence[np.ndarray], checkpoints: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """Per checkpoint ``T'``: the uniform average of the first ``T'`` iterates, its value, its Nash
    gap (and per player) and, in a constant-sum game, its duality gap (``uniform_average_*``).

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
        res = nash_gap(game, [s / t for s in sums])
        out[t] = evaluated_fields("uniform_average", res.value, res.best_response_value, game)
    return out
