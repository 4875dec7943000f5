"""Built-in and random discounted games.

* A normal-form game with payoffs ``u[i, a]`` played forever with discount ``gamma`` is the
  one-state discounted game ``rewards[i, 0, a] = u[i, a]``, ``transitions[0, a, 0] = 1``: every
  stationary policy's value is ``u_i(pi) / (1 - gamma)``, and its Nash equilibria are the
  stage game's played at every step (the discounted counterpart of
  [`normal_form_game`][markovgames.games.normal_form_game], and a "reduces to" check of every discounted computation).
* A random discounted game is [`random_game`][markovgames.games.random_game]'s law with one step: the
  same seed draws the same numbers as ``random_game(N, 1, S, A, ...)``, whose one step's arrays
  become the stationary rewards and kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._suggest import did_you_mean
from ._builtin import UnknownGameError, _bimatrix, _textbook_units, normal_form_game, random_game
from ._discounted import DiscountedMarkovGame, check_discount
from ._model import MAX_GAME_ENTRIES, SparseTransitions
from ._units import AffineRescaling

__all__ = [
    "discounted_normal_form_game",
    "random_discounted_game",
    "DISCOUNTED_GAMES",
    "get_discounted_builtin",
]


def discounted_normal_form_game(
    payoffs: ArrayLike,
    discount: float,
    name: str = "normal_form_discounted",
    description: str = "",
    *,
    units: AffineRescaling | None = None,
) -> DiscountedMarkovGame:
    """A normal-form game (payoffs ``(N, A_0, ..., A_{N-1})`` in ``[0, 1]``) repeated forever with discount ``gamma``.

    The one-state game ``rewards[i, 0, a] = payoffs[i, a]``, ``transitions[0, a, 0] = 1``; the
    payoffs are checked as by [`normal_form_game`][markovgames.games.normal_form_game].
    """
    stage = normal_form_game(payoffs, name=name, description=description, units=units)
    return DiscountedMarkovGame(
        stage.rewards[0], stage.transitions[0], discount, 0, name=name, description=description, units=units
    )


def _matching_pennies_discounted() -> DiscountedMarkovGame:
    lo, hi = -1.0, 1.0
    row = [[1, -1], [-1, 1]]
    return discounted_normal_form_game(
        _bimatrix(row, -np.asarray(row), lo, hi),
        0.9,
        name="matching_pennies_discounted",
        description="Matching pennies (+1/-1, rescaled to [0, 1]) repeated forever with discount 0.9; one state; "
        "value of the game 0.5 / (1 - 0.9) = 5 for each player",
        units=_textbook_units(lo, hi),
    )


def _prisoners_dilemma_discounted() -> DiscountedMarkovGame:
    lo, hi = 0.0, 5.0
    # The textbook payoffs of prisoners_dilemma: (C, C) = 3, (C, D) = 0 / 5, (D, D) = 1.
    row = [[3, 0], [5, 1]]
    return discounted_normal_form_game(
        _bimatrix(row, np.asarray(row).T, lo, hi),
        0.9,
        name="prisoners_dilemma_discounted",
        description="Prisoner's dilemma (payoffs 0..5 rescaled by x/5) repeated forever with discount 0.9; one state",
        units=_textbook_units(lo, hi),
    )


def random_discounted_game(
    num_players: int,
    num_states: int,
    num_actions: int | Sequence[int],
    discount: float,
    *,
    seed_or_rng: int | np.random.Generator,
    reward_distribution: str = "uniform",
    transition_concentration: float = 1.0,
    initial_state: int = 0,
    name: str | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
    num_successors: int | None = None,
    zero_sum: bool = False,
) -> DiscountedMarkovGame:
    """A random discounted game: [`random_game`][markovgames.games.random_game]'s law, stationary.

    The rewards ``rewards[i, s, a]`` and the kernel's rows are drawn exactly as
    ``random_game(num_players, 1, num_states, num_actions, ...)`` draws its one step (the same
    seed, the same numbers); ``zero_sum`` makes ``r_1 = 1 - r_0`` (two players), ``num_successors``
    a sparse kernel. ``discount`` is ``gamma`` in ``[0, 1)``.
    """
    gamma = check_discount(discount)
    one_step = random_game(
        num_players,
        1,
        num_states,
        num_actions,
        seed_or_rng=seed_or_rng,
        reward_distribution=reward_distribution,
        transition_concentration=transition_concentration,
        initial_state=initial_state,
        name=name,
        max_entries=max_entries,
        num_successors=num_successors,
        zero_sum=zero_sum,
    )
    if name is None:
        # random_game's name with the horizon replaced by the discount.
        name = one_step.name.replace(",H=1,", f",gamma={gamma:g},", 1)
    transitions: np.ndarray | SparseTransitions
    if one_step.is_sparse:
        sparse = one_step.sparse_transitions
        transitions = SparseTransitions(sparse.successors[0], sparse.probabilities[0])
    else:
        transitions = one_step.transitions[0]
    return DiscountedMarkovGame(
        one_step.rewards[0],
        transitions,
        gamma,
        initial_state,
        name=name,
        description=one_step.description.replace("Random ", "Random discounted ", 1) + f"; discount {gamma:g}",
        max_entries=max_entries,
    )


#: Built-in discounted games by name; each value builds a fresh game.
DISCOUNTED_GAMES: dict[str, Callable[[], DiscountedMarkovGame]] = {
    "matching_pennies_discounted": _matching_pennies_discounted,
    "prisoners_dilemma_discounted": _prisoners_dilemma_discounted,
}


def get_discounted_builtin(name: str) -> DiscountedMarkovGame:
    """Build the built-in discounted game ``name`` (`DISCOUNTED_GAMES`)."""
    try:
        factory = DISCOUNTED_GAMES[name]
    except (KeyError, TypeError):
        raise UnknownGameError(
            f"unknown built-in discounted game {name!r}{did_you_mean(str(name), DISCOUNTED_GAMES)}; "
            f"choices: {', '.join(sorted(DISCOUNTED_GAMES))}"
        ) from None
    return factory()
