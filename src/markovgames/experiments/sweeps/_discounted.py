"""Discounted games in a sweep: what a sweep of them is, and what its cells cannot take.

A sweep's games are all finite-horizon or all discounted (`check_one_kind`): its results table
holds one kind of run, whose columns it has (a discounted run reports value estimates and its
iterates' exact gaps, no correlated output policy; docs/discounted.md). Each cell of a discounted
sweep runs through [`run_batch`][markovgames.dynamics.run_batch] on its discounted games (the
discounted value updates, ``LEARNER+discounted-smooth`` and its uniform and linear forms), as
``markovgames run`` runs one; what ``markovgames run`` refuses for a discounted game is refused
here naming the key and the cell (`check_discounted_cell`): a value update of the other kind of
game, ``exact`` (no output policy), a ``'theory'`` learning rate (no paper's rate is implemented
for a discounted update), bandit feedback and V-learning (episodes of ``H`` steps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...games import DiscountedMarkovGame, MarkovGame
from ._config import SweepConfigError
from ._values import is_bandit

if TYPE_CHECKING:
    from ...dynamics import Algorithm
    from ._config import AlgorithmSpec, SweepConfig

__all__ = ["check_one_kind", "check_discounted_cell", "game_shape"]


def game_shape(game: MarkovGame | DiscountedMarkovGame, with_discount: bool = False) -> dict[str, Any]:
    """A game's shape as run files and the manifest record it: ``{N, H, S, A}``; a discounted
    game has no horizon: ``{N, S, A}`` (and its ``discount`` with ``with_discount``)."""
    if isinstance(game, DiscountedMarkovGame):
        shape: dict[str, Any] = {"N": game.num_players, "S": game.num_states, "A": list(game.num_actions)}
        return {**shape, "discount": game.discount} if with_discount else shape
    return {"N": game.num_players, "H": game.horizon, "S": game.num_states, "A": list(game.num_actions)}


def _kind(game: MarkovGame | DiscountedMarkovGame) -> str:
    return "a discounted game" if isinstance(game, DiscountedMarkovGame) else "a finite-horizon game"


def check_one_kind(games: list[tuple[int, MarkovGame | DiscountedMarkovGame]]) -> None:
    """Refuse a grid whose games (``(entry index, game)``) are of both kinds, naming the first
    entry of the other kind than ``games[0]``'s."""
    if not games:
        return
    first_index, first = games[0]
    for index, game in games:
        if isinstance(game, DiscountedMarkovGame) != isinstance(first, DiscountedMarkovGame):
            raise SweepConfigError(
                f"games[{index}]: {game.name!r} is {_kind(game)}, and games[{first_index}] {first.name!r} {_kind(first)}: "
                "a sweep's games are of one kind (its results table has the columns of one kind of run); "
                "sweep them in two configurations"
            )


def _list_key(alg_index: int, own: list | None, key: str, position: int) -> str:
    """The key of entry ``position`` of a list an algorithm's table may set (``own``) or the sweep's."""
    return f"algorithms[{alg_index}].{key}[{position}]" if own else f"{key}[{position}]"


def check_discounted_cell(
    config: SweepConfig,
    alg_index: int,
    alg: AlgorithmSpec,
    spec: Algorithm | None,
    game_index: int,
    game: MarkovGame | DiscountedMarkovGame,
) -> None:
    """Refuse (`SweepConfigError`, naming the key and the cell ``algorithms[k]`` on ``games[j]``)
    a value update of the other kind of game than ``game``'s, and on a discounted game what a
    discounted run cannot take (as ``markovgames run`` refuses its options); ``spec``: the
    algorithm's composition (``None``: V-learning)."""
    from ...dynamics._discounted_run import check_update_for_game

    if spec is not None:
        try:
            check_update_for_game(spec, game, f"games[{game_index}]")
        except ValueError as err:
            raise SweepConfigError(f"algorithms[{alg_index}]: {err}") from None
    if not isinstance(game, DiscountedMarkovGame):
        return
    if spec is None:
        raise SweepConfigError(
            f"algorithms[{alg_index}]: {alg.name!r} is V-learning, which plays episodes of H steps (docs/vlearning.md), "
            f"and games[{game_index}] {game.name!r} is a discounted game (discount = {game.discount!r}); use a composition "
            "LEARNER+discounted-smooth"
        )
    cell = (
        f"algorithms[{alg_index}] {alg.name!r} on games[{game_index}] {game.name!r} (a discounted game, "
        f"discount = {game.discount!r})"
    )
    if config.exact:
        raise SweepConfigError(
            f"exact: {cell}: a discounted game's run has no output policy to evaluate; last_iterate = true and "
            "weighted_average = true evaluate the last and the weighted average iterates of a discounted run exactly"
        )
    from ...dynamics import resolve_learning_rate

    for j, eta in enumerate(alg.etas or config.etas):
        if isinstance(eta, str):  # theory or theory:PAPER: no paper's rate is implemented for a discounted update
            try:
                resolve_learning_rate(eta, spec, game)
            except ValueError as err:
                raise SweepConfigError(f"{_list_key(alg_index, alg.etas, 'etas', j)}: {cell}: {err}") from None
    for j, feedback in enumerate(alg.feedbacks or config.feedbacks):
        if is_bandit(feedback):
            raise SweepConfigError(
                f"{_list_key(alg_index, alg.feedbacks, 'feedbacks', j)}: {cell}: bandit feedback plays episodes of H "
                "steps, which a discounted game has not; use full or sampled:K"
            )
