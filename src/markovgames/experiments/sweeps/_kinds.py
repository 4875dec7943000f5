"""Sweeps of finite-horizon and of discounted games: building a random game of either kind, and
refusing, naming the keys, an algorithm or a setting that a game of its kind has no form of.

A discounted game (``random = {discount = G, ...}``, a built-in discounted game, or a discounted
game file) runs the discounted value update (``LEARNER+discounted-smooth``, docs/discounted.md) in
the same compiled loop as `markovgames run` on it. Its runs have no correlated output policy: what
a sweep measures on them is the last iterate's and the weighted average of the iterates' values,
Nash gaps and (zero-sum) duality gaps (``last_iterate = true``, ``weighted_average = true``), and
the learners' value estimates (the ``value`` column).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dynamics import Algorithm
from ...dynamics._discounted_run import check_update_for_game
from ...games import DiscountedMarkovGame, MarkovGame, random_discounted_game, random_game
from ._config import SweepConfig, SweepConfigError
from ._values import is_bandit

__all__ = ["build_random_game", "check_game_kind"]


def build_random_game(spec: Any, seed: int | np.random.Generator, max_entries: int) -> MarkovGame | DiscountedMarkovGame:
    """The random game of a ``random = {...}`` table (`RandomGameSpec`) with ``seed``: finite-horizon,
    or discounted where the table gives ``discount`` in place of ``horizon``."""
    law: dict[str, Any] = {
        "reward_distribution": spec.reward_distribution,
        "transition_concentration": spec.transition_concentration,
        "initial_state": spec.initial_state,
        "num_successors": spec.successors,
        "max_entries": max_entries,
        "zero_sum": spec.zero_sum,
    }
    if spec.discount is None:
        return random_game(spec.players, spec.horizon, spec.states, spec.action_tuple, seed_or_rng=seed, **law)
    return random_discounted_game(spec.players, spec.states, spec.action_tuple, spec.discount, seed_or_rng=seed, **law)


def check_game_kind(config: SweepConfig, alg_index: int, alg, spec_alg: Algorithm | None, index: int, game) -> None:
    """Refuse, naming the keys, an algorithm whose value update is not of the game's kind, and on a
    discounted game what its runs have no form of: a correlated output policy's exact gaps, a
    theory rate, bandit feedback; and a discounted sweep that measures nothing (its runs' measures
    are the last iterate's and the weighted average's gaps)."""
    where = f"algorithms[{alg_index}] on games[{index}]"
    if spec_alg is None:
        if isinstance(game, DiscountedMarkovGame):
            raise SweepConfigError(f"{where}: {alg.name!r} is V-learning, which learns in episodes of finite-horizon games")
        return
    try:
        check_update_for_game(spec_alg, game, f"games[{index}]")
    except ValueError as err:
        raise SweepConfigError(f"{where}: {err}") from None
    if not isinstance(game, DiscountedMarkovGame):
        return
    if not (config.last_iterate or config.weighted_average):
        raise SweepConfigError(
            f"last_iterate: games[{index}] is a discounted game, whose runs have no correlated output policy: their "
            "measures are the last iterate's and the weighted average's gaps; set last_iterate = true or "
            "weighted_average = true"
        )
    if config.exact:
        raise SweepConfigError(
            f"exact: games[{index}] is a discounted game: exact gaps are those of a finite-horizon run's output "
            "policy; a discounted run's last iterate and weighted average are evaluated exactly already"
        )
    for eta in alg.etas or config.etas:
        if isinstance(eta, str):
            key = f"algorithms[{alg_index}].etas" if alg.etas else "etas"
            raise SweepConfigError(f"{key}: {where}: no paper states a theory rate for the discounted value update; give numbers")
    for feedback in alg.feedbacks or config.feedbacks:
        if is_bandit(feedback):
            key = f"algorithms[{alg_index}].feedbacks" if alg.feedbacks else "feedbacks"
            raise SweepConfigError(f"{key}: {where}: {feedback} learns from play in episodes of finite-horizon games")
